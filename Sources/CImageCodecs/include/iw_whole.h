#ifndef IW_WHOLE_H
#define IW_WHOLE_H
#include <stddef.h>
#include <stdint.h>
#include "iw_jpeg.h"

/* A whole-buffer decode or encode result; free `pixels` / `bytes` with iw_free. */
typedef struct {
    uint32_t width, height, image_width, image_height;
    int channels;
    uint8_t *pixels;
    int error_kind;
    char error[256];
    size_t released; /* iw_jpeg_decode_whole_into: coefficient memory handed back (bytes) */
    uint64_t refined_blocks; /* iw_jpeg_decode_whole_into: AC refinement blocks decoded by iw_jpeg_refine.c */
} iw_image;

/* TurboJPEG (2.x API) whole-buffer decoding into the caller's buffer, in two steps: the output
 * size (after scaling) from the header: 0, or 1 when TurboJPEG cannot take the file (CMYK, a header
 * it cannot classify) and the libjpeg path must be used, or IW_FAILED with out->error set; then the
 * decode into `pixels` of out->width * out->height * channels bytes. Corrupt-data warnings are
 * accepted, as djpeg does, except a premature end of data, which is reported as truncation. */
int iw_tj_header(const uint8_t *data, size_t length, iw_layout layout, uint64_t max_pixels, int scale_denom, iw_image *out);
int iw_tj_decode_into(const uint8_t *data, size_t length, iw_layout layout, int scale_denom, uint8_t *pixels, iw_image *out);

/* The same decode for a progressive (multi-scan) JPEG, with libjpeg instead of TurboJPEG: the same
 * pixels and errors, but the coefficient buffer is handed back row by row as the output pass leaves
 * it (when it holds 4 MiB or more and `pixels` is not resident yet, so that it lowers the peak):
 * the peak is then about the bitmap rather than bitmap + coefficients. `out` comes from
 * iw_tj_header (the output size is checked against it); max_scans > 0 refuses files with more
 * scans (IW_ERR_LIMIT). 0 or IW_FAILED. */
int iw_jpeg_decode_whole_into(const uint8_t *data, size_t length, iw_layout layout, int scale_denom, int max_scans,
                              uint8_t *pixels, iw_image *out);

/* (`mode`: iw_refine_mode, in iw_jpeg.h.) */
int iw_jpeg_decode_whole_with(const uint8_t *data, size_t length, iw_layout layout, int scale_denom, int max_scans,
                              iw_refine_mode mode, uint8_t *pixels, iw_image *out);

/* libpng's simplified API, whole buffer, to 8-bit RGBA. */
int iw_png_decode_simplified(const uint8_t *data, size_t length, uint64_t max_pixels, iw_image *out);

/* The same into the caller's `pixels` of `capacity` bytes: RGBA (width * height * 4), or, when
 * `opaque_rgb` is set and the image has no alpha (nor tRNS), RGB (width * height * 3), which is the
 * same as dropping the opaque alpha. out->channels says which; 0 or IW_FAILED. */
int iw_png_decode_simplified_into(const uint8_t *data, size_t length, int opaque_rgb, uint8_t *pixels, size_t capacity,
                                  iw_image *out);

/* PNG encoding of 8-bit pixels with 1 (gray), 3 (RGB) or 4 (RGBA) channels (iw_png_encode.c):
 * `fast` (every PNG the worker delivers) uses the Up filter and iw_deflate's Huffman coding with
 * runs, otherwise libpng's defaults. Returns 0 and a malloc'd buffer, or IW_FAILED with a message in `error`. */
int iw_png_encode(const uint8_t *pixels, uint32_t width, uint32_t height, int channels, size_t stride, int fast,
                  uint8_t **bytes, size_t *length, char error[256]);

/* JPEG encoding with TurboJPEG (tjCompress2) of 8-bit pixels with 1 (grey), 3 (RGB) or 4 (RGBA:
 * alpha dropped) channels: `quality` 1-100, `subsampling` 444, 422 or 420 (grey images have no
 * chroma). Returns 0 and a malloc'd buffer (iw_free), or IW_FAILED with a message in `error`. */
int iw_jpeg_encode(const uint8_t *pixels, uint32_t width, uint32_t height, int channels, size_t stride, int quality,
                   int subsampling, uint8_t **bytes, size_t *length, char error[256]);

void iw_free(void *pointer);

/* Sets a failed result's error kind and message; returns IW_FAILED. */
int iw_image_fail(iw_image *out, int kind, const char *message);

/* Lets the C allocator (glibc) serve allocations below `bytes` from its heap and keep up to `bytes`
 * of freed memory for reuse, instead of mapping and unmapping each large bitmap (whose fresh pages
 * then fault in one by one). 0 on success, -1 where there is no such setting. */
int iw_retain_freed_memory(size_t bytes);
#endif
