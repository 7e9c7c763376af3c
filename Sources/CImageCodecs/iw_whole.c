/* What the whole-buffer paths share (iw_whole.h): their result's error, and memory. The decoders
 * are in iw_turbojpeg.c (TurboJPEG), iw_jpeg_whole.c (libjpeg, progressive files), iw_png_whole.c
 * (libpng's simplified read API); PNG encoding in iw_png_encode.c. */
#include "iw_whole.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

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

int iw_image_fail(iw_image *out, int kind, const char *message) {
    out->error_kind = kind;
    snprintf(out->error, sizeof out->error, "%s", message ? message : "unknown error");
    return IW_FAILED;
}
