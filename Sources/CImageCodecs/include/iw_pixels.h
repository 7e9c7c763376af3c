#ifndef IW_PIXELS_H
#define IW_PIXELS_H
#include <stddef.h>
#include <stdint.h>

/* BT.601 luma of an 8-bit RGB pixel in 16-bit fixed point, as libjpeg's RGB to grey. */
static inline uint8_t iw_luma(unsigned r, unsigned g, unsigned b) {
    return (uint8_t)((r * 19595u + g * 38470u + b * 7471u + 32768u) >> 16);
}

/* `count` pixels of 8-bit `from` channels (1 grey, 3 RGB, 4 RGBA) to `to` channels: colour to grey
 * is the luma, grey to colour repeats the value, RGBA to RGB drops alpha, added alpha is opaque.
 * Every output byte is written. */
void iw_convert_pixels(const uint8_t *src, int from, uint8_t *dst, int to, size_t count);

#endif
