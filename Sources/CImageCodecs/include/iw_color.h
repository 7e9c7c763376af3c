#ifndef IW_COLOR_H
#define IW_COLOR_H
#include <stddef.h>
#include <stdint.h>
#include "iw_jpeg.h"

/* Colour management with Little CMS: pixels described by a file's colour information turned into
 * sRGB. A transform is made once per (profile, pixel kind, layout) and kept in a process-wide
 * cache (iw_color.c); transforms are made with lcms2's cmsFLAGS_NOCACHE, so any number of threads
 * use one at once. Nothing here longjmps; a profile lcms2 cannot read gives NULL (the caller
 * leaves the pixels as stored, as browsers do). */

typedef struct iw_color_transform iw_color_transform;

/* What the source pixels are. */
typedef enum {
    IW_COLOR_FROM_PIXELS = 0,  /* RGB, RGBA or gray values as the layout says (the profile may be RGB or gray) */
    IW_COLOR_FROM_CMYK = 1,    /* 4 bytes a pixel, C M Y K as stored (0: no ink) */
    IW_COLOR_FROM_CMYK_INVERTED = 2 /* Adobe's inverted CMYK (255: no ink) */
} iw_color_source;

/* The transform from an ICC profile's space to sRGB for pixels of `layout` (CMYK sources: the
 * output layout), cached; NULL when there is nothing to do: the profile is sRGB's (an RGB
 * matrix/curve profile with sRGB's primaries, white and curve, as the many copies of
 * "sRGB IEC61966-2.1" are), unreadable, or not for such pixels (an RGB profile for gray pixels,
 * a CMYK profile for RGB pixels). Release it when done. */
iw_color_transform *iw_color_from_icc(const uint8_t *icc, size_t length, iw_color_source source, iw_layout layout);

/* The transform for RGB pixels encoded with a power-law curve of `gamma` (2.2: what libpng gives
 * for a file with gAMA) or the sRGB curve (gamma 0), with the primaries and white point given as
 * CIE xy chromaticities (PNG cHRM; AVIF's colour primaries): red, green, blue, white. NULL when
 * they do not make a valid space. Cached; release it when done. */
iw_color_transform *iw_color_from_primaries(const double xy[8], double gamma, iw_layout layout);

/* AVIF's (ISO/IEC 23091-2) colour primaries and transfer characteristics: the transform to sRGB,
 * or NULL when none is needed (BT.709/sRGB primaries with the sRGB or BT.709 curve, or
 * "unspecified") or the pair is one this worker does not convert (PQ and HLG high dynamic range). */
iw_color_transform *iw_color_from_cicp(unsigned primaries, unsigned transfer, iw_layout layout);

/* Converts `count` pixels from `in` to `out` (they may be the same memory for PIXELS sources; a
 * CMYK source reads 4 bytes a pixel and writes the layout's). Alpha is kept. */
void iw_color_convert(const iw_color_transform *transform, const uint8_t *in, uint8_t *out, size_t count);

/* The same with `portable`: the portable C loops only, never the vector ones (tests compare them). */
void iw_color_convert_portable(const iw_color_transform *transform, const uint8_t *in, uint8_t *out, size_t count, int portable);

void iw_color_release(iw_color_transform *transform);

#endif
