/* Whole-buffer paths: TurboJPEG decoding, libpng's simplified read API. None of these longjmp
 * across frames: TurboJPEG and the simplified API catch libjpeg's and libpng's errors themselves
 * and return codes. (PNG encoding: iw_png_encode.c.) */
#include "iw_whole.h"
#include "iw_limits.h"
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <string.h>
#include <turbojpeg.h>

void iw_free(void *pointer) { free(pointer); }

int iw_retain_freed_memory(size_t bytes) {
#if defined(__GLIBC__)
    int limit = bytes > (size_t)INT_MAX ? INT_MAX : (int)bytes;
    return mallopt(M_MMAP_THRESHOLD, limit) == 1 && mallopt(M_TRIM_THRESHOLD, limit) == 1 ? 0 : -1;
#else
    (void)bytes;
    return -1;
#endif
}

static int set_error(iw_image *out, int kind, const char *message) {
    out->error_kind = kind;
    snprintf(out->error, sizeof out->error, "%s", message ? message : "unknown error");
    return IW_FAILED;
}

int iw_tj_header(const uint8_t *data, size_t length, iw_layout layout, uint64_t max_pixels, int scale_denom, iw_image *out) {
    memset(out, 0, sizeof *out);
    tjhandle tj = tjInitDecompress();
    if (!tj) return set_error(out, IW_ERR_MEMORY, "cannot start TurboJPEG");
    /* TurboJPEG 2.1 reports success without touching the size when the stream holds no image
     * (tables only), hence the zeroes and the size check. */
    int width = 0, height = 0, subsampling = 0, colorspace = 0;
    int status = tjDecompressHeader3(tj, data, (unsigned long)length, &width, &height, &subsampling, &colorspace);
    tjDestroy(tj);
    /* TurboJPEG refuses some valid files it cannot classify (unusual subsampling, some CMYK), and
     * cannot turn CMYK into RGB: the libjpeg path decodes those, and gives the authoritative error
     * for bad ones. */
    if (status != 0 || width <= 0 || height <= 0 || colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) return 1;
    out->image_width = (uint32_t)width;
    out->image_height = (uint32_t)height;
    char message[IW_LIMIT_MESSAGE_SIZE];
    if (iw_over_pixel_limit((uint64_t)width, (uint64_t)height, max_pixels, message)) return set_error(out, IW_ERR_LIMIT, message);
    int denom = (scale_denom == 2 || scale_denom == 4 || scale_denom == 8) ? scale_denom : 1;
    out->width = (uint32_t)((width + denom - 1) / denom);
    out->height = (uint32_t)((height + denom - 1) / denom);
    out->channels = layout == IW_RGBA ? 4 : layout == IW_RGB ? 3 : 1;
    return 0;
}

int iw_tj_decode_into(const uint8_t *data, size_t length, iw_layout layout, int scale_denom, uint8_t *pixels, iw_image *out) {
    (void)scale_denom; /* the size in `out` already carries the scale */
    tjhandle tj = tjInitDecompress();
    if (!tj) return set_error(out, IW_ERR_MEMORY, "cannot start TurboJPEG");
    int format = layout == IW_RGBA ? TJPF_RGBA : layout == IW_RGB ? TJPF_RGB : TJPF_GRAY;
    if (tjDecompress2(tj, data, (unsigned long)length, pixels, (int)out->width, 0, (int)out->height, format, 0) != 0) {
        const char *message = tjGetErrorStr2(tj);
        int warning = tjGetErrorCode(tj) == TJERR_WARNING;
        /* Corrupt-data warnings are accepted, as djpeg does, except a premature end of data. */
        if (!warning || strstr(message, "Premature end")) {
            int kind = !warning ? (strstr(message, "Unsupported") ? IW_ERR_UNSUPPORTED : IW_ERR_CORRUPT) : IW_ERR_TRUNCATED;
            set_error(out, kind, message);
            tjDestroy(tj);
            return IW_FAILED;
        }
    }
    tjDestroy(tj);
    return 0;
}

int iw_png_decode_simplified(const uint8_t *data, size_t length, uint64_t max_pixels, iw_image *out) {
    memset(out, 0, sizeof *out);
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, data, length)) return set_error(out, IW_ERR_CORRUPT, image.message);
    uint32_t width = image.width, height = image.height;
    png_image_free(&image);
    char message[IW_LIMIT_MESSAGE_SIZE];
    if (iw_over_pixel_limit(width, height, max_pixels, message)) {
        out->image_width = width;
        out->image_height = height;
        return set_error(out, IW_ERR_LIMIT, message);
    }
    size_t size = (size_t)width * height * 4;
    uint8_t *pixels = malloc(size ? size : 1);
    if (!pixels) return set_error(out, IW_ERR_MEMORY, "out of memory for the pixel buffer");
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
    if (!png_image_begin_read_from_memory(&image, data, length)) return set_error(out, IW_ERR_CORRUPT, image.message);
    int rgb = opaque_rgb && (image.format & PNG_FORMAT_FLAG_ALPHA) == 0;
    image.format = rgb ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
    if (PNG_IMAGE_SIZE(image) > capacity) {
        png_image_free(&image);
        return set_error(out, IW_ERR_CORRUPT, "the image size does not match the buffer");
    }
    if (!png_image_finish_read(&image, NULL, pixels, 0, NULL)) return set_error(out, IW_ERR_CORRUPT, image.message);
    out->width = out->image_width = image.width;
    out->height = out->image_height = image.height;
    out->channels = rgb ? 3 : 4;
    return 0;
}
