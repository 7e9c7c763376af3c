/* Whole-buffer PNG decoding with libpng's simplified read API, which catches libpng's errors
 * itself and returns codes: nothing longjmps across frames here. */
#include "iw_whole.h"
#include "iw_limits.h"
#include <png.h>
#include <stdlib.h>
#include <string.h>

int iw_png_decode_simplified(const uint8_t *data, size_t length, uint64_t max_pixels, iw_image *out) {
    memset(out, 0, sizeof *out);
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, data, length)) return iw_image_fail(out, IW_ERR_CORRUPT, image.message);
    uint32_t width = image.width, height = image.height;
    png_image_free(&image);
    char message[IW_LIMIT_MESSAGE_SIZE];
    if (iw_over_pixel_limit(width, height, max_pixels, message)) {
        out->image_width = width;
        out->image_height = height;
        return iw_image_fail(out, IW_ERR_LIMIT, message);
    }
    size_t size = (size_t)width * height * 4;
    uint8_t *pixels = malloc(size ? size : 1);
    if (!pixels) return iw_image_fail(out, IW_ERR_MEMORY, "out of memory for the pixel buffer");
    if (iw_png_decode_simplified_into(data, length, 0, pixels, size, out) != 0) {
        free(pixels);
        return IW_FAILED;
    }
    out->pixels = pixels;
    return 0;
}

int iw_png_decode_simplified_into(const uint8_t *data, size_t length, int opaque_rgb, uint8_t *pixels, size_t capacity,
                                  iw_image *out) {
    memset(out, 0, sizeof *out);
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, data, length)) return iw_image_fail(out, IW_ERR_CORRUPT, image.message);
    /* A 16-bit file without gAMA or sRGB is sRGB, as browsers and other decoders take it (libpng
     * would take it as linear light and brighten it; its manual asks to expose the choice). */
    image.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
    int rgb = opaque_rgb && (image.format & PNG_FORMAT_FLAG_ALPHA) == 0;
    image.format = rgb ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
    if (PNG_IMAGE_SIZE(image) > capacity) {
        png_image_free(&image);
        return iw_image_fail(out, IW_ERR_CORRUPT, "the image size does not match the buffer");
    }
    if (!png_image_finish_read(&image, NULL, pixels, 0, NULL)) return iw_image_fail(out, IW_ERR_CORRUPT, image.message);
    out->width = out->image_width = image.width;
    out->height = out->image_height = image.height;
    out->channels = rgb ? 3 : 4;
    return 0;
}
