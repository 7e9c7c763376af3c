#ifndef IW_WEBP_H
#define IW_WEBP_H
#include <stddef.h>
#include <stdint.h>
#include "iw_whole.h"

/* What a WebP file's header says (iw_webp_header). */
typedef struct {
    uint32_t width, height; /* the canvas of an animated file */
    int has_alpha;
    int animated;
    int lossless; /* 1 lossless, 0 lossy (or mixed, for animations) */
    uint32_t frame_count;
    uint32_t loop_count; /* 0: forever */
} iw_webp_info;

/* Reads a WebP file's header: 0 with `info` filled, 1 when more bytes are needed to tell, or
 * IW_FAILED with out->error set. The pixel limit is checked against the canvas; when `complete`
 * and the file is animated, its frames are counted (by the demuxer, without decoding) and refused
 * over max_frames (0: no limit). */
int iw_webp_header(const uint8_t *data, size_t length, int complete, uint64_t max_pixels, uint32_t max_frames,
                   iw_webp_info *info, iw_image *out);

/* A still WebP decoded into `pixels` (channels 3 RGB or 4 RGBA, width * channels bytes a row) at
 * width x height: its own size, or smaller, scaled by libwebp's rescaler while decoding. 0 or
 * IW_FAILED. */
int iw_webp_decode_into(const uint8_t *data, size_t length, int channels, uint32_t width, uint32_t height, uint8_t *pixels,
                        iw_image *out);

/* An animated WebP's first frame over a transparent canvas (RGBA, canvas width * 4 a row),
 * pixels outside the frame left transparent. 0 or IW_FAILED. */
int iw_webp_first_frame_into(const uint8_t *data, size_t length, uint8_t *pixels, iw_image *out);

/* Incremental decoding of a still WebP with libwebp's WebPIDecoder, into the caller's `pixels`
 * (zeroed, width x height x channels, kept by the caller) at width x height (scaled when smaller
 * than the image). Each byte appended is decoded once. */
typedef struct iw_webp_inc iw_webp_inc;
iw_webp_inc *iw_webp_inc_create(int channels, uint32_t width, uint32_t height, uint8_t *pixels);
/* Appends bytes: 0 (more wanted), 1 (the image is complete) or IW_FAILED (iw_webp_inc_error). */
int iw_webp_inc_append(iw_webp_inc *dec, const uint8_t *data, size_t length);
/* Rows from the top holding decoded pixels. */
uint32_t iw_webp_inc_rows(const iw_webp_inc *dec);
int iw_webp_inc_error_kind(const iw_webp_inc *dec);
const char *iw_webp_inc_error(const iw_webp_inc *dec);
void iw_webp_inc_destroy(iw_webp_inc *dec);

/* WebP encoding of 8-bit pixels (1 grey, 3 RGB or 4 RGBA channels; `stride` bytes a row): lossy at
 * `quality` (0-100) or lossless (then `quality` is the effort). A fully opaque RGBA image is written
 * without an alpha channel. 0 and a malloc'd buffer (iw_free), or IW_FAILED with `error` set. */
int iw_webp_encode(const uint8_t *pixels, uint32_t width, uint32_t height, int channels, size_t stride, int quality, int lossless,
                   uint8_t **bytes, size_t *length, char error[256]);

#endif
