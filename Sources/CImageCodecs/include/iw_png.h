#ifndef IW_PNG_H
#define IW_PNG_H
#include <stddef.h>
#include <stdint.h>
#include "iw_jpeg.h" /* shared event bits and error kinds */

typedef struct iw_png iw_png;

/* libpng's limits in every reader: the bytes one chunk may allocate (a larger ancillary chunk is
 * skipped with a warning) and how many ancillary chunks are kept. */
#define IW_PNG_MAX_CHUNK_BYTES (8u << 20)
#define IW_PNG_MAX_ANCILLARY_CHUNKS 128

/* A whole PNG buffer's chunk structure, checked before libpng reads it from memory: every chunk
 * up to IEND lies inside the buffer. IW_ERR_NONE, or IW_ERR_TRUNCATED / IW_ERR_CORRUPT with a
 * message: so a chunk that claims more bytes than there are allocates nothing, and a file cut
 * anywhere before its IEND fails the same way in every path (the progressive reader needs IEND
 * too). On the way, `*may_have_alpha`: 0 only for a file whose IHDR has no alpha channel and
 * with no tRNS chunk before its image data. */
int iw_png_check_chunks(const uint8_t *data, size_t length, int *may_have_alpha, char error[256]);

/* Progressive PNG decoding (libpng's png_process_data) to 8-bit RGBA, with the transforms of
 * libpng's simplified API (png_image_finish_read with PNG_FORMAT_RGBA), so the result is the
 * same pixels, except for 16-bit interlaced files: libpng 1.6.39 misplaces their rows in both
 * readers, so their passes are placed here (iw_png.c). max_pixels: refuse larger images before allocating (0: libpng's own limits). */
iw_png *iw_png_create(uint64_t max_pixels);
void iw_png_destroy(iw_png *d);
int iw_png_feed(iw_png *d, const uint8_t *data, size_t length, int last);
int iw_png_error_kind(const iw_png *d);
const char *iw_png_error(const iw_png *d);
uint32_t iw_png_width(const iw_png *d);
uint32_t iw_png_height(const iw_png *d);
/* RGBA, stride width * 4; NULL before the first IW_PIXELS. */
const uint8_t *iw_png_pixels(const iw_png *d);
/* Non-interlaced: rows complete from the top. Interlaced: the height once a pass is complete. */
uint32_t iw_png_rows(const iw_png *d);
/* Interlaced: Adam7 passes complete (0..7). */
int iw_png_passes(const iw_png *d);

/* Rows as they are decoded, for a scale-down that never holds the full-size image: called with
 * each RGBA row (width * 4 bytes, valid during the call) and its index, from inside iw_png_feed.
 * Set before the first feed; it applies to non-interlaced files only (iw_png_rows_streamed says
 * so once the header is in), which then have no frame (iw_png_pixels is NULL). The sink must not
 * call back into this decoder. */
typedef void (*iw_png_row_sink)(void *context, const uint8_t *row, uint32_t y);
void iw_png_stream_rows(iw_png *d, iw_png_row_sink sink, void *context);
int iw_png_rows_streamed(const iw_png *d);

/* Row by row, for non-interlaced files in a whole buffer (libpng's sequential reader, the same
 * transforms, so the same RGBA rows): a scale-down that never holds the full-size image.
 * iw_png_reader_open returns NULL with *kind == IW_ERR_NONE for an interlaced file (decode it whole),
 * or NULL with *kind and error set when the file cannot be read (or is over max_pixels).
 * iw_png_reader_next writes the next row (width * 4 bytes): 0, or IW_FAILED with the error set. */
typedef struct iw_png_row_reader iw_png_row_reader;
iw_png_row_reader *iw_png_reader_open(const uint8_t *data, size_t length, uint64_t max_pixels, int *kind, char error[256]);
uint32_t iw_png_reader_width(const iw_png_row_reader *r);
uint32_t iw_png_reader_height(const iw_png_row_reader *r);
int iw_png_reader_next(iw_png_row_reader *r, uint8_t *row);
int iw_png_reader_error_kind(const iw_png_row_reader *r);
const char *iw_png_reader_error(const iw_png_row_reader *r);
void iw_png_reader_close(iw_png_row_reader *r);
#endif
