#ifndef IW_JXL_H
#define IW_JXL_H
#include <stddef.h>
#include <stdint.h>
#include "iw_jpeg.h"

/* JPEG XL with libjxl: an incremental decoder of a file's first frame (an animation's first
 * frame, as the other formats'), its size and EXIF-style orientation from the basic info before any
 * pixel buffer, partial images as progressive passes arrive (JXL_DEC_FRAME_PROGRESSION, then
 * JxlDecoderFlushImage) and, for a sequential file, as groups arrive. The pixels are as stored
 * (not turned: `orientation` says how). libjxl returns status codes: nothing longjmps here. */
typedef struct iw_jxl iw_jxl;

/* `layout`: RGBA gives 4 channels, RGB and gray 3 (gray is the caller's conversion). With
 * `manage_color`, an XYB-encoded (lossy) file is decoded straight to sRGB by libjxl; a file stored
 * in its original space reports its ICC profile (iw_jxl_icc) for the caller to convert. */
iw_jxl *iw_jxl_create(iw_layout layout, uint64_t max_pixels, int manage_color);
void iw_jxl_destroy(iw_jxl *d);

/* More bytes (copied); returns IW_HEADER / IW_PIXELS / IW_COMPLETE bits, or IW_FAILED. */
int iw_jxl_feed(iw_jxl *d, const uint8_t *data, size_t length, int last);
void iw_jxl_want_partial_frames(iw_jxl *d, int wanted);

int iw_jxl_error_kind(const iw_jxl *d);
const char *iw_jxl_error(const iw_jxl *d);
uint32_t iw_jxl_width(const iw_jxl *d);
uint32_t iw_jxl_height(const iw_jxl *d);
int iw_jxl_channels(const iw_jxl *d);
int iw_jxl_orientation(const iw_jxl *d);
/* Frames the file says it animates (0: a still image; 1 or more: an animation, uncounted). */
int iw_jxl_animated(const iw_jxl *d);
/* The pixels so far (NULL before the first IW_PIXELS), and the partial passes they show. */
const uint8_t *iw_jxl_pixels(const iw_jxl *d);
int iw_jxl_passes(const iw_jxl *d);
/* The ICC profile of the pixels' colour space, when the caller is to convert them (or keeps them). */
const uint8_t *iw_jxl_icc(const iw_jxl *d, size_t *length);

/* Whether the bytes start like a JPEG XL file (codestream or container). */
int iw_jxl_signature(const uint8_t *data, size_t length);
/* The size and orientation from the basic info of a file's first bytes, nothing decoded: 0, or
 * IW_FAILED when they do not hold it. */
int iw_jxl_probe(const uint8_t *data, size_t length, uint32_t *width, uint32_t *height, int *orientation);

#endif
