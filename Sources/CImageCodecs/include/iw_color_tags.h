#ifndef IW_COLOR_TAGS_H
#define IW_COLOR_TAGS_H
#include <stddef.h>
#include <stdint.h>

/* Where PNG and WebP files keep what their colours mean, read from the bytes without decoding
 * (a JPEG's APP2 profile: iw_jpeg_scan_icc; AVIF's: iw_avif_header). Every read is bounds-checked:
 * these are the bytes of untrusted files. */
typedef struct {
    uint8_t *icc; /* an ICC profile (malloc'd: iw_color_tags_free), NULL when none */
    size_t icc_length;
    int srgb;     /* a PNG sRGB chunk */
    int has_cicp; /* a PNG cICP chunk: ISO/IEC 23091-2 colour primaries and transfer */
    unsigned cicp_primaries, cicp_transfer;
    int has_chrm; /* a PNG cHRM chunk: red, green, blue and white as CIE xy */
    double xy[8];
    int has_gama; /* a PNG gAMA chunk (libpng's output then follows a 2.2 power curve) */
} iw_color_tags;

/* A PNG's colour chunks before its image data (cICP, iCCP inflated, sRGB, cHRM, gAMA; one whose
 * CRC is wrong is passed over, as libpng does; an iCCP over 32 MiB inflated is left out). Returns 1
 * once the bytes reach the image data (nothing more can come), 0 before. */
int iw_png_scan_color(const uint8_t *data, size_t length, iw_color_tags *tags);

/* A WebP's ICCP chunk (an extended file's, before the image data). Returns 1 once the bytes reach
 * the image data, 0 before. */
int iw_webp_scan_color(const uint8_t *data, size_t length, iw_color_tags *tags);

void iw_color_tags_free(iw_color_tags *tags);

/* A whole PNG iCCP chunk (length, type, "ICC Profile", method 0, the profile zlib-compressed,
 * CRC) for `icc`, into *chunk (malloc'd: free()); 0 or -1. */
int iw_png_iccp_chunk(const uint8_t *icc, size_t length, uint8_t **chunk, size_t *chunk_length);

#endif
