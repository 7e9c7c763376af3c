#ifndef IW_EXIF_H
#define IW_EXIF_H
#include <stddef.h>
#include <stdint.h>

/* EXIF orientation (1..8): the Orientation tag (0x0112) of IFD0 in a TIFF block, the form EXIF
 * takes in a JPEG's APP1 segment (after "Exif\0\0"), a PNG's eXIf chunk and a WebP's EXIF chunk.
 * A block that starts with "Exif\0\0" (as some writers put in eXIf and EXIF chunks) is read past
 * it. 1 when absent or unreadable. */
int iw_exif_orientation(const uint8_t *data, size_t length);

/* The orientation in a whole PNG's eXIf chunk (before or after the image data; one whose CRC is
 * wrong is ignored, as libpng ignores it); 1 when there is none. Nothing is decoded. */
int iw_png_scan_orientation(const uint8_t *data, size_t length);

/* The same for the first bytes of a PNG, as they arrive: only an eXIf chunk before the image
 * data counts; *reached_image is 1 once the bytes reach the first IDAT (no such chunk can come
 * before it any more). */
int iw_png_scan_orientation_before_image(const uint8_t *data, size_t length, int *reached_image);

/* The orientation in a whole WebP's EXIF chunk (an extended file's, usually after the image
 * data); 1 when there is none. Nothing is decoded. */
int iw_webp_scan_orientation(const uint8_t *data, size_t length);

#endif
