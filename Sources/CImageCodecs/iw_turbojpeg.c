/* Whole-buffer JPEG decoding with TurboJPEG (2.x API: tjDecompressHeader3, tjDecompress2), which
 * catches libjpeg's errors itself and returns codes: nothing longjmps across frames here. */
#include "iw_whole.h"
#include "iw_limits.h"
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

int iw_tj_header(const uint8_t *data, size_t length, iw_layout layout, uint64_t max_pixels, int scale_denom, iw_image *out) {
    memset(out, 0, sizeof *out);
    tjhandle tj = tjInitDecompress();
    if (!tj) return iw_image_fail(out, IW_ERR_MEMORY, "cannot start TurboJPEG");
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
    if (iw_over_pixel_limit((uint64_t)width, (uint64_t)height, max_pixels, message)) return iw_image_fail(out, IW_ERR_LIMIT, message);
    int denom = (scale_denom == 2 || scale_denom == 4 || scale_denom == 8) ? scale_denom : 1;
    out->width = (uint32_t)((width + denom - 1) / denom);
    out->height = (uint32_t)((height + denom - 1) / denom);
    out->channels = layout == IW_RGBA ? 4 : layout == IW_RGB ? 3 : 1;
    return 0;
}

int iw_tj_decode_into(const uint8_t *data, size_t length, iw_layout layout, int scale_denom, uint8_t *pixels, iw_image *out) {
    (void)scale_denom; /* the size in `out` already carries the scale */
    tjhandle tj = tjInitDecompress();
    if (!tj) return iw_image_fail(out, IW_ERR_MEMORY, "cannot start TurboJPEG");
    int format = layout == IW_RGBA ? TJPF_RGBA : layout == IW_RGB ? TJPF_RGB : TJPF_GRAY;
    if (tjDecompress2(tj, data, (unsigned long)length, pixels, (int)out->width, 0, (int)out->height, format, 0) != 0) {
        const char *message = tjGetErrorStr2(tj);
        int warning = tjGetErrorCode(tj) == TJERR_WARNING;
        /* Corrupt-data warnings are accepted, as djpeg does, except a premature end of data. */
        if (!warning || strstr(message, "Premature end")) {
            int kind = !warning ? (strstr(message, "Unsupported") ? IW_ERR_UNSUPPORTED : IW_ERR_CORRUPT) : IW_ERR_TRUNCATED;
            iw_image_fail(out, kind, message);
            tjDestroy(tj);
            return IW_FAILED;
        }
    }
    tjDestroy(tj);
    return 0;
}
