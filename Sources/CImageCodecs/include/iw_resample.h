#ifndef IW_RESAMPLE_H
#define IW_RESAMPLE_H
#include <stddef.h>
#include <stdint.h>

/* Area-weighted (box-filter) resampling, separable: each row across as it arrives, then down over
 * the few rows that each output row covers. With 4 channels (RGBA) colour is weighted by alpha
 * (premultiplied in 8 bits, then divided back), so transparent pixels' colour never shows. 16-bit integer weights (up to 15 fractional bits) that sum to
 * exactly one per output pixel, computed once per axis; rows pushed top to bottom, one at a time,
 * so a decoder can scale while it decodes without holding its full-size image. Pushing every row
 * of an image gives the same bytes as iw_resize. */
typedef struct iw_resampler iw_resampler;

/* Writes into `output` (out_w * out_h * channels bytes) when it is not NULL, else into memory of
 * its own (iw_resampler_output). NULL when memory runs out or a size is 0. channels: 1, 3 or 4. */
iw_resampler *iw_resampler_new(uint32_t in_w, uint32_t in_h, uint32_t out_w, uint32_t out_h, int channels, uint8_t *output);
void iw_resampler_free(iw_resampler *r);
/* The next input row (in_w * channels bytes); rows past the last are ignored. */
void iw_resampler_push(iw_resampler *r, const uint8_t *row);
/* The next input row given as 8-bit RGBA (in_w * 4 bytes) and converted to the resampler's
 * channels first (iw_convert_pixels). */
void iw_resampler_push_rgba(iw_resampler *r, const uint8_t *rgba);
/* Output rows from the top that are final. */
uint32_t iw_resampler_completed_rows(const iw_resampler *r);
uint8_t *iw_resampler_output(iw_resampler *r);

/* A whole image (rows of in_w * channels bytes, no padding) into `output`; 0, or -1 when memory
 * runs out. */
int iw_resize(const uint8_t *input, uint32_t in_w, uint32_t in_h, int channels, uint8_t *output, uint32_t out_w, uint32_t out_h);
/* iw_resize with the portable loops only, where the CPU has vector ones (SSE4.1): the same bytes,
 * for comparing the two. */
int iw_resize_portable(const uint8_t *input, uint32_t in_w, uint32_t in_h, int channels, uint8_t *output, uint32_t out_w, uint32_t out_h);

#endif
