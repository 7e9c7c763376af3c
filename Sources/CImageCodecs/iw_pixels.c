#include "iw_pixels.h"
#include <string.h>

void iw_convert_pixels(const uint8_t *src, int from, uint8_t *dst, int to, size_t count) {
    if (from == to) {
        memcpy(dst, src, count * (size_t)from);
        return;
    }
    for (size_t i = 0; i < count; i++, src += from, dst += to) {
        if (to == 1) {
            dst[0] = iw_luma(src[0], src[1], src[2]);
            continue;
        }
        if (from == 1) {
            dst[0] = dst[1] = dst[2] = src[0];
        } else {
            dst[0] = src[0], dst[1] = src[1], dst[2] = src[2];
        }
        if (to == 4) dst[3] = 255;
    }
}
