#ifndef IW_AVIF_H
#define IW_AVIF_H
#include <stddef.h>
#include <stdint.h>
#include "iw_whole.h"

/* What an AVIF file's container says (iw_avif_header). */
typedef struct {
    uint32_t width, height;
    uint32_t depth;       /* 8, 10 or 12 bits a sample */
    int has_alpha;
    uint32_t frame_count; /* 1 for a still image; a sequence's frames */
    int orientation;      /* the container's irot/imir as an EXIF orientation, 1-8 */
    uint8_t *icc;         /* the colr box's ICC profile (malloc'd: free() it), NULL when none */
    size_t icc_length;
    unsigned color_primaries, transfer; /* the nclx colr box's (ISO/IEC 23091-2), 2 when unspecified */
} iw_avif_info;

/* Parses a whole AVIF file's container (libavif, with the codecs it was built with): its size,
 * checked against max_pixels, and its frame count, against max_frames (0: no limit), before any
 * pixel is decoded, and a copy of its ICC profile (left NULL on failure). 0 or IW_FAILED with out->error. */
int iw_avif_header(const uint8_t *data, size_t length, uint64_t max_pixels, uint32_t max_frames, iw_avif_info *info,
                   iw_image *out);

/* Decodes the (first) image into `pixels`: 8-bit RGB (channels 3) or RGBA (4), width * channels
 * bytes a row, 10- and 12-bit samples scaled to 8 bits, alpha not premultiplied. The size must be
 * the header's. 0 or IW_FAILED. */
int iw_avif_decode_into(const uint8_t *data, size_t length, int channels, uint32_t width, uint32_t height, uint8_t *pixels,
                        iw_image *out);

#endif
