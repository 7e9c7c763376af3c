#include "iw_limits.h"
#include <stdio.h>

int iw_over_pixel_limit(uint64_t width, uint64_t height, uint64_t max_pixels, char message[IW_LIMIT_MESSAGE_SIZE]) {
    /* Sides are at most 2^32 - 1 in every format read here: the product fits 64 bits. */
    if (!max_pixels || width * height <= max_pixels) return 0;
    snprintf(message, IW_LIMIT_MESSAGE_SIZE, "image of %llux%llu pixels exceeds the limit of %llu pixels", (unsigned long long)width,
             (unsigned long long)height, (unsigned long long)max_pixels);
    return 1;
}
