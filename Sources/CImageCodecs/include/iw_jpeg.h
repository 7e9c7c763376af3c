#ifndef IW_JPEG_H
#define IW_JPEG_H
#include <stddef.h>
#include <stdint.h>

/* Pixel layouts the decoders produce. */
typedef enum { IW_RGBA = 0, IW_RGB = 1, IW_GRAY = 2 } iw_layout;

/* What a feed call brought about (a bit set), or IW_FAILED. */
enum {
    IW_HEADER = 1,    /* width and height are known (reported once) */
    IW_PIXELS = 2,    /* more of the image is available: rows, or a completed scan */
    IW_COMPLETE = 4,  /* the whole image is decoded */
    IW_SCAN = 8,      /* progressive: a scan completed (rendered into the frame or not) */
    IW_FAILED = -1    /* see iw_jpeg_error(); the decoder can do nothing more */
};

/* Why it failed. */
enum { IW_ERR_NONE = 0, IW_ERR_CORRUPT = 1, IW_ERR_UNSUPPORTED = 2, IW_ERR_LIMIT = 3, IW_ERR_TRUNCATED = 4, IW_ERR_MEMORY = 5 };

typedef struct iw_jpeg iw_jpeg;

/* Who decodes the AC refinement scans of a progressive file (most of its decode time): the fastest
 * decoder of iw_jpeg_refine.c this CPU runs (what the decoders use unless told), its portable one,
 * or libjpeg's own. All give the same pixels; tests and benchmarks compare them. */
typedef enum { IW_REFINE_FASTEST = 0, IW_REFINE_PORTABLE = 1, IW_REFINE_LIBJPEG = 2 } iw_refine_mode;

/* max_pixels: refuse larger images before allocating anything (0: no limit).
 * max_scans: refuse progressive files with more scans (0: no limit).
 * scale_denom: 1, 2, 4 or 8 — libjpeg's DCT scaling (output is ceil(size / denom)). */
iw_jpeg *iw_jpeg_create(iw_layout layout, uint64_t max_pixels, int max_scans, int scale_denom);
void iw_jpeg_destroy(iw_jpeg *d);

/* Before the first feed: who decodes refinement scans (IW_REFINE_FASTEST unless told); and how
 * many of their blocks iw_jpeg_refine.c decoded so far. */
void iw_jpeg_set_refine_mode(iw_jpeg *d, iw_refine_mode mode);
uint64_t iw_jpeg_refined_blocks(const iw_jpeg *d);

/* Before the first feed: a CMYK or YCCK file with an ICC profile (APP2) is converted to sRGB
 * through it (Little CMS) instead of the naive CMYK formula. Other files' colours are the caller's
 * (iw_color.h), as are the rows of a file without a profile. */
void iw_jpeg_manage_color(iw_jpeg *d, int on);

/* Gives the decoder more bytes (they are copied); `last` says no more will come. Decodes as far
 * as the bytes allow and returns what happened. Never exits, never longjmps past its own frame. */
int iw_jpeg_feed(iw_jpeg *d, const uint8_t *data, size_t length, int last);

int iw_jpeg_error_kind(const iw_jpeg *d);
const char *iw_jpeg_error(const iw_jpeg *d);

/* Valid after IW_HEADER. */
uint32_t iw_jpeg_image_width(const iw_jpeg *d);   /* as stored in the file */
uint32_t iw_jpeg_image_height(const iw_jpeg *d);
uint32_t iw_jpeg_width(const iw_jpeg *d);         /* as output (after scaling) */
uint32_t iw_jpeg_height(const iw_jpeg *d);
int iw_jpeg_channels(const iw_jpeg *d);
/* EXIF orientation 1..8 from an APP1 segment seen before the image data, 1 when absent. */
int iw_jpeg_orientation(const iw_jpeg *d);

/* The output pixels (stride = width * channels); NULL before the first IW_PIXELS. */
const uint8_t *iw_jpeg_pixels(const iw_jpeg *d);
/* Baseline: rows decoded from the top. Progressive: the height once a scan has been rendered. */
uint32_t iw_jpeg_rows(const iw_jpeg *d);
/* Progressive: the scans the current frame shows (0 for baseline, and before the first frame). */
int iw_jpeg_scans(const iw_jpeg *d);
/* Progressive: whether to render a frame for scans completed from now on (default 1). While 0,
 * scans are absorbed without their output pass, the costly part of a partial frame; the next
 * wanted frame shows all of them, and the final frame is always rendered. */
void iw_jpeg_want_partial_frames(iw_jpeg *d, int wanted);

/* Progressive: the scans completed so far, whether or not a frame shows them. */
int iw_jpeg_completed_scans(const iw_jpeg *d);
/* A preview of a progressive JPEG as its coefficients are now, without an output pass: each 8x8
 * block's average (its DC coefficient, as libjpeg's 1/8-scale IDCT computes it), chroma taken from
 * the block that covers the pixel, in the decoder's layout: ceil(width / 8) x ceil(height / 8)
 * pixels of the stored image (whatever the decoder's own scale). iw_jpeg_preview_size gives the
 * size from the decoder's start to the end of the image data (when the coefficients are freed), or
 * IW_FAILED when it can have none (not progressive, CMYK or YCCK); iw_jpeg_preview writes size * channels bytes into `out` once a scan is complete; 0 or
 * IW_FAILED. */
int iw_jpeg_preview_size(const iw_jpeg *d, uint32_t *width, uint32_t *height);
int iw_jpeg_preview(iw_jpeg *d, uint8_t *out);

/* A progressive file's final frame is not rendered by iw_jpeg_feed: once IW_COMPLETE,
 * iw_jpeg_final_pending says so, and iw_jpeg_final_into writes the final image into `out`
 * (width * height * channels bytes), once (the frame buffer is not used for it, so iw_jpeg_pixels
 * is NULL from completion on). Other files' final image is their frame. 0, or IW_FAILED when no
 * final pass is pending or it failed (error set). */
int iw_jpeg_final_pending(const iw_jpeg *d);
int iw_jpeg_final_into(iw_jpeg *d, uint8_t *out);

/* EXIF orientation (1..8) from the APP1 segments before a JPEG's image data; 1 when absent. */
int iw_jpeg_scan_orientation(const uint8_t *data, size_t length);
/* The ICC profile in the APP2 "ICC_PROFILE" segments before a JPEG's image data, assembled from
 * its numbered chunks into *icc (malloc'd: free it with free()); 1, or 0 when there is none or
 * a chunk is missing or repeated. */
int iw_jpeg_scan_icc(const uint8_t *data, size_t length, uint8_t **icc, size_t *icc_length);
/* A JPEG's size from its frame header, read by walking the marker segments before the image data:
 * nothing is decoded or allocated, so a header announcing a huge image costs nothing. 0 when a
 * frame header with a nonzero size was found, IW_FAILED otherwise. */
int iw_jpeg_probe(const uint8_t *data, size_t length, uint32_t *width, uint32_t *height);
/* Whether a JPEG's frame header (SOF2, 6, 10 or 14, before the image data) says progressive. */
int iw_jpeg_has_progressive_frame(const uint8_t *data, size_t length);

#endif
