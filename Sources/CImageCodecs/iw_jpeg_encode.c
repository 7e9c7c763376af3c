/* JPEG encoding with TurboJPEG (2.x API: tjCompress2), which returns codes: nothing longjmps here. */
#include "iw_whole.h"
#include <stdio.h>
#include <stdlib.h>
#include <turbojpeg.h>

int iw_jpeg_encode(const uint8_t *pixels, uint32_t width, uint32_t height, int channels, size_t stride, int quality,
                   int subsampling, uint8_t **bytes, size_t *length, char error[256]) {
    *bytes = NULL;
    *length = 0;
    if (width == 0 || height == 0 || width > 65535 || height > 65535) {
        snprintf(error, 256, "JPEG holds at most 65535x65535 pixels, not %ux%u", width, height);
        return IW_FAILED;
    }
    int format = channels == 4 ? TJPF_RGBA : channels == 3 ? TJPF_RGB : TJPF_GRAY;
    int samp = channels == 1 ? TJSAMP_GRAY : subsampling == 444 ? TJSAMP_444 : subsampling == 422 ? TJSAMP_422 : TJSAMP_420;
    /* The worst case's buffer from the C allocator (pages it never touches cost nothing), so that
     * the result is freed like every other with iw_free. */
    unsigned long capacity = tjBufSize((int)width, (int)height, samp);
    if (capacity == (unsigned long)-1) {
        snprintf(error, 256, "cannot size a JPEG of %ux%u pixels", width, height);
        return IW_FAILED;
    }
    unsigned char *buffer = malloc(capacity);
    if (!buffer) {
        snprintf(error, 256, "out of memory");
        return IW_FAILED;
    }
    tjhandle tj = tjInitCompress();
    if (!tj) {
        free(buffer);
        snprintf(error, 256, "cannot start TurboJPEG");
        return IW_FAILED;
    }
    unsigned long size = capacity;
    int q = quality < 1 ? 1 : quality > 100 ? 100 : quality;
    int status = tjCompress2(tj, pixels, (int)width, (int)stride, (int)height, format, &buffer, &size, samp, q,
                             TJFLAG_NOREALLOC);
    if (status != 0) {
        snprintf(error, 256, "JPEG encoding failed: %s", tjGetErrorStr2(tj));
        tjDestroy(tj);
        free(buffer);
        return IW_FAILED;
    }
    tjDestroy(tj);
    /* Give back what the worst case reserved beyond the file. */
    unsigned char *fitted = realloc(buffer, size ? size : 1);
    *bytes = fitted ? fitted : buffer;
    *length = size;
    return 0;
}
