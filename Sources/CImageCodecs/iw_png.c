/* Progressive PNG decoding with libpng's push reader. libpng's errors longjmp back to the setjmp
 * in iw_png_feed, in this file; nothing crosses a Swift frame. */
#include "iw_png.h"
#include "iw_limits.h"
#include "iw_whole.h"
#include "iw_png_failure.h"
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


struct iw_png {
    png_structp png;
    png_infop info;
    uint64_t max_pixels;
    png_uint_32 width, height;
    int interlaced;
    uint8_t *pixels;
    png_bytep *rows;
    uint32_t rows_done;
    /* 16-bit interlaced files: libpng 1.6.39 misplaces their rows after the 16-to-8-bit
     * transforms when it de-interlaces them, in the push reader and in the simplified API alike
     * (the same image's non-interlaced twin shows it). They are read without libpng's interlace
     * handling: each pass's narrow rows are placed here, each pixel filling the block that later
     * passes refine, so the frame after the last pass is the image. */
    int places_passes;
    int pass, passes_done;
    /* Rows handed to `sink` as they are decoded, instead of kept in a full-size frame (set before
     * the header; used only for non-interlaced files). */
    iw_png_row_sink sink;
    void *sink_context;
    int streaming, have_header;
    enum { PNG_FAILED = -1, PNG_RUNNING = 0, PNG_COMPLETE = 1 } stage;
    int pending_events;
    struct iw_png_failure failure;
};

static void set_failure(struct iw_png_failure *f, int kind, const char *message) {
    f->kind = kind;
    snprintf(f->text, sizeof f->text, "%s", message);
}

void iw_png_on_error(png_structp png, png_const_charp message) {
    struct iw_png_failure *f = png_get_error_ptr(png);
    if (f->kind == IW_ERR_NONE) set_failure(f, IW_ERR_CORRUPT, message);
    png_longjmp(png, 1);
}

static void fail_with(png_structp png, struct iw_png_failure *f, int kind, const char *message) {
    set_failure(f, kind, message);
    png_longjmp(png, 1);
}

void iw_png_on_warning(png_structp png, png_const_charp message) {
    (void)png;
    (void)message;
}

/* The simplified API's transforms for 8-bit sRGB RGBA output (png_image_read_direct, with
 * PNG_IMAGE_FLAG_16BIT_sRGB as iw_png_whole.c sets it): a file's gAMA or sRGB chunk is honoured,
 * and a file without either is taken as sRGB at any depth. Returns whether the file is 16-bit. */
static int set_rgba_transforms(png_structp png, png_infop info) {
    int depth = png_get_bit_depth(png, info), color = png_get_color_type(png, info);
    png_set_expand(png);
    int has_color = (color & PNG_COLOR_MASK_COLOR) != 0;
    int has_alpha = (color & PNG_COLOR_MASK_ALPHA) != 0 || png_get_valid(png, info, PNG_INFO_tRNS);
    int sixteen = depth == 16;
    if (!has_color) png_set_gray_to_rgb(png);
    png_set_alpha_mode_fixed(png, PNG_ALPHA_PNG, PNG_DEFAULT_sRGB);
    if (sixteen) png_set_scale_16(png);
    if (!has_alpha) png_set_add_alpha(png, 255, PNG_FILLER_AFTER);
    return sixteen;
}

static void on_info(png_structp png, png_infop info) {
    struct iw_png *d = png_get_progressive_ptr(png);
    /* libpng calls this at every IDAT run: a second run after other chunks ("Too many IDATs", a
     * benign error here) calls it again. The header, transforms and buffers of the first stay. */
    if (d->have_header) return;
    int depth, color, interlace;
    png_get_IHDR(png, info, &d->width, &d->height, &depth, &color, &interlace, NULL, NULL);
    char message[IW_LIMIT_MESSAGE_SIZE];
    if (iw_over_pixel_limit(d->width, d->height, d->max_pixels, message)) fail_with(d->png, &d->failure, IW_ERR_LIMIT, message);
    d->interlaced = interlace != PNG_INTERLACE_NONE;
    d->places_passes = set_rgba_transforms(png, info) && d->interlaced;
    if (!d->places_passes) png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != (size_t)d->width * 4) fail_with(d->png, &d->failure, IW_ERR_CORRUPT, "unexpected row layout");
    d->have_header = 1;
    d->pending_events |= IW_HEADER;
    if (d->sink && !d->interlaced) {
        d->streaming = 1;
        return;
    }
    size_t size = (size_t)d->width * d->height * 4;
    d->pixels = calloc(size ? size : 1, 1);
    d->rows = malloc(sizeof(png_bytep) * (d->height ? d->height : 1));
    if (!d->pixels || !d->rows) fail_with(d->png, &d->failure, IW_ERR_MEMORY, "out of memory for the pixel buffer");
    for (png_uint_32 y = 0; y < d->height; y++) d->rows[y] = d->pixels + (size_t)y * d->width * 4;
}

void iw_png_apply_read_limits(png_structp png) {
    /* As the simplified API: ancillary-chunk problems are warnings; CRC errors in critical chunks
     * stay errors. */
    png_set_benign_errors(png, 1);
    /* libpng's own limits guard what max_pixels does not cover: the size of one chunk's buffer
     * (and of a decompressed zTXt/iCCP), and how many ancillary chunks are stored. */
    png_set_user_limits(png, 1u << 24, 1u << 24);
    png_set_chunk_cache_max(png, IW_PNG_MAX_ANCILLARY_CHUNKS);
    png_set_chunk_malloc_max(png, IW_PNG_MAX_CHUNK_BYTES);
    /* Chunks that libpng copies whole into a buffer the size their length claims, and that no
     * pixel depends on, are skipped unread: libpng 1.6.39 allocates and clears that buffer even
     * after warning that the chunk is over the limit (a 170-byte file claiming a 2 GiB tEXt
     * made it touch 2 GiB). */
    static const png_byte skipped[] = "tEXt\0zTXt\0iTXt\0eXIf\0pCAL\0sCAL\0sPLT\0";
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, skipped, (int)(sizeof skipped / 5));
}

int iw_png_check_chunks(const uint8_t *data, size_t length, int *may_have_alpha, char error[256]) {
    static const uint8_t signature[8] = {137, 80, 78, 71, 13, 10, 26, 10};
    error[0] = 0;
    *may_have_alpha = 1; /* until IHDR and the chunks before IDAT say otherwise */
    int seen_ihdr = 0, seen_idat = 0, alpha = 0;
    if (length < 8 || memcmp(data, signature, 8) != 0) {
        snprintf(error, 256, "not a PNG signature");
        return IW_ERR_CORRUPT;
    }
    size_t at = 8;
    while (length - at >= 8) {
        uint32_t size = (uint32_t)data[at] << 24 | (uint32_t)data[at + 1] << 16 | (uint32_t)data[at + 2] << 8 | data[at + 3];
        const uint8_t *type = data + at + 4;
        if (size > 0x7fffffffu) {
            snprintf(error, 256, "chunk %.4s claims %u bytes, more than PNG allows", (const char *)type, size);
            return IW_ERR_CORRUPT;
        }
        if ((uint64_t)length - at < (uint64_t)size + 12) {
            snprintf(error, 256, "the PNG data ends inside its %.4s chunk (%u bytes claimed, %zu left)", (const char *)type, size,
                     length - at - 8);
            return IW_ERR_TRUNCATED;
        }
        if (memcmp(type, "IHDR", 4) == 0 && size >= 13) {
            seen_ihdr = 1;
            alpha |= (type[4 + 9] & 4) != 0; /* colour type with an alpha channel */
        } else if (memcmp(type, "tRNS", 4) == 0 && !seen_idat) {
            alpha = 1; /* tRNS must come before the image data */
        } else if (memcmp(type, "IDAT", 4) == 0) {
            seen_idat = 1;
        }
        if (memcmp(type, "IEND", 4) == 0) {
            *may_have_alpha = !seen_ihdr || alpha;
            return IW_ERR_NONE;
        }
        at += (size_t)size + 12;
    }
    snprintf(error, 256, "the PNG data ends before its IEND chunk");
    return IW_ERR_TRUNCATED;
}

/* A pass row of a file read without interlace handling (`places_passes`): row `n` of Adam7 pass
 * `pass`, its pixels at their places, each filling the block up to the next pixel of its pass and
 * down to the next row of it (later passes write over what is theirs). */
static void place_pass_row(struct iw_png *d, png_bytep row, png_uint_32 n, int pass) {
    static const png_uint_32 x0[7] = {0, 4, 0, 2, 0, 1, 0}, dx[7] = {8, 8, 4, 4, 2, 2, 1};
    static const png_uint_32 y0[7] = {0, 0, 4, 0, 2, 0, 1}, dy[7] = {8, 8, 8, 4, 4, 2, 2};
    static const png_uint_32 bw[7] = {8, 4, 4, 2, 2, 1, 1}, bh[7] = {8, 8, 4, 4, 2, 2, 1};
    if (pass < 0 || pass > 6 || !row) return;
    png_uint_32 y = y0[pass] + n * dy[pass];
    if (y >= d->height) return;
    for (png_uint_32 x = x0[pass], k = 0; x < d->width; x += dx[pass], k++) {
        const png_byte *pixel = row + (size_t)k * 4;
        for (png_uint_32 by = y; by < y + bh[pass] && by < d->height; by++)
            for (png_uint_32 bx = x; bx < x + bw[pass] && bx < d->width; bx++) memcpy(d->rows[by] + (size_t)bx * 4, pixel, 4);
    }
}

static void on_row(png_structp png, png_bytep row, png_uint_32 y, int pass) {
    struct iw_png *d = png_get_progressive_ptr(png);
    if (d->places_passes) {
        while (pass > d->pass) {
            d->pass++;
            d->passes_done = d->pass;
            d->pending_events |= IW_PIXELS;
        }
        place_pass_row(d, row, y, pass);
        return;
    }
    if (y >= d->height) return;
    if (d->interlaced) {
        while (pass > d->pass) { /* the previous pass is complete */
            d->pass++;
            d->passes_done = d->pass;
            d->pending_events |= IW_PIXELS;
        }
        if (row) png_progressive_combine_row(png, d->rows[y], row);
    } else if (d->streaming) {
        if (row) d->sink(d->sink_context, row, y);
        d->rows_done = y + 1;
        d->pending_events |= IW_PIXELS;
    } else {
        if (row) png_progressive_combine_row(png, d->rows[y], row);
        d->rows_done = y + 1;
        d->pending_events |= IW_PIXELS;
    }
}

static void on_end(png_structp png, png_infop info) {
    (void)info;
    struct iw_png *d = png_get_progressive_ptr(png);
    /* IEND after image data that ended early (a whole zlib stream holding too few rows): refused,
     * as the whole-buffer decoder refuses it, not a success with the missing rows blank. */
    if (!d->interlaced && d->rows_done < d->height) {
        char message[128];
        snprintf(message, sizeof message, "the PNG image data ends after %u of its %u rows", d->rows_done, d->height);
        fail_with(png, &d->failure, IW_ERR_TRUNCATED, message);
    }
    if (d->interlaced) d->passes_done = 7;
    d->rows_done = d->height;
    d->stage = PNG_COMPLETE;
    d->pending_events |= IW_PIXELS | IW_COMPLETE;
}

iw_png *iw_png_create(uint64_t max_pixels) {
    struct iw_png *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->max_pixels = max_pixels;
    d->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &d->failure, iw_png_on_error, iw_png_on_warning);
    if (!d->png) { free(d); return NULL; }
    d->info = png_create_info_struct(d->png);
    if (!d->info) { png_destroy_read_struct(&d->png, NULL, NULL); free(d); return NULL; }
    iw_png_apply_read_limits(d->png);
    png_set_progressive_read_fn(d->png, d, on_info, on_row, on_end);
    return d;
}

void iw_png_destroy(iw_png *d) {
    if (!d) return;
    png_destroy_read_struct(&d->png, &d->info, NULL);
    free(d->pixels);
    free(d->rows);
    free(d);
}

int iw_png_feed(iw_png *d, const uint8_t *data, size_t length, int last) {
    if (d->stage == PNG_FAILED) return IW_FAILED;
    if (d->stage == PNG_COMPLETE) return 0;
    d->pending_events = 0;
    if (setjmp(png_jmpbuf(d->png))) {
        d->stage = PNG_FAILED;
        return IW_FAILED;
    }
    if (length > 0) png_process_data(d->png, d->info, (png_bytep)data, length);
    int events = d->pending_events;
    if (last && d->stage != PNG_COMPLETE) {
        d->stage = PNG_FAILED;
        set_failure(&d->failure, IW_ERR_TRUNCATED, "the PNG data ends before the image is complete");
        return events ? events : IW_FAILED;
    }
    return events;
}

void iw_png_stream_rows(iw_png *d, iw_png_row_sink sink, void *context) {
    d->sink = sink;
    d->sink_context = context;
}

int iw_png_rows_streamed(const iw_png *d) { return d->streaming; }

int iw_png_error_kind(const iw_png *d) { return d->failure.kind; }
const char *iw_png_error(const iw_png *d) { return d->failure.text; }
uint32_t iw_png_width(const iw_png *d) { return d->width; }
uint32_t iw_png_height(const iw_png *d) { return d->height; }
const uint8_t *iw_png_pixels(const iw_png *d) { return d->pixels; }
uint32_t iw_png_rows(const iw_png *d) { return d->interlaced ? (d->passes_done ? d->height : 0) : d->rows_done; }
int iw_png_passes(const iw_png *d) { return d->passes_done; }

/* MARK: row by row (non-interlaced files, whole buffer) */

struct iw_png_row_reader {
    png_structp png;
    png_infop info;
    const uint8_t *data;
    size_t length, offset;
    png_uint_32 width, height, next_row;
    struct iw_png_failure failure;
};

static void rows_read(png_structp png, png_bytep out, size_t count) {
    struct iw_png_row_reader *r = png_get_io_ptr(png);
    if (count > r->length - r->offset) fail_with(png, &r->failure, IW_ERR_TRUNCATED, "the PNG data ends before the image is complete");
    memcpy(out, r->data + r->offset, count);
    r->offset += count;
}

iw_png_row_reader *iw_png_reader_open(const uint8_t *data, size_t length, uint64_t max_pixels, int *kind, char error[256]) {
    *kind = IW_ERR_NONE;
    error[0] = 0;
    struct iw_png_row_reader *r = calloc(1, sizeof *r);
    if (!r) {
        *kind = IW_ERR_MEMORY;
        snprintf(error, 256, "out of memory");
        return NULL;
    }
    r->data = data;
    r->length = length;
    r->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r->failure, iw_png_on_error, iw_png_on_warning);
    r->info = r->png ? png_create_info_struct(r->png) : NULL;
    if (!r->info) {
        png_destroy_read_struct(&r->png, NULL, NULL);
        free(r);
        *kind = IW_ERR_MEMORY;
        snprintf(error, 256, "out of memory");
        return NULL;
    }
    if (setjmp(png_jmpbuf(r->png))) {
        *kind = r->failure.kind ? r->failure.kind : IW_ERR_CORRUPT;
        snprintf(error, 256, "%s", r->failure.text);
        iw_png_reader_close(r);
        return NULL;
    }
    iw_png_apply_read_limits(r->png);
    png_set_read_fn(r->png, r, rows_read);
    png_read_info(r->png, r->info);
    int depth, color, interlace;
    png_get_IHDR(r->png, r->info, &r->width, &r->height, &depth, &color, &interlace, NULL, NULL);
    char message[IW_LIMIT_MESSAGE_SIZE];
    if (iw_over_pixel_limit(r->width, r->height, max_pixels, message)) fail_with(r->png, &r->failure, IW_ERR_LIMIT, message);
    if (interlace != PNG_INTERLACE_NONE) {
        /* Adam7 rows come pass by pass: the caller decodes such files whole. */
        iw_png_reader_close(r);
        return NULL;
    }
    set_rgba_transforms(r->png, r->info);
    png_read_update_info(r->png, r->info);
    if (png_get_rowbytes(r->png, r->info) != (size_t)r->width * 4) fail_with(r->png, &r->failure, IW_ERR_CORRUPT, "unexpected row layout");
    return r;
}

uint32_t iw_png_reader_width(const iw_png_row_reader *r) { return r->width; }
uint32_t iw_png_reader_height(const iw_png_row_reader *r) { return r->height; }

int iw_png_reader_next(iw_png_row_reader *r, uint8_t *row) {
    if (r->failure.kind != IW_ERR_NONE) return IW_FAILED;
    if (setjmp(png_jmpbuf(r->png))) {
        if (r->failure.kind == IW_ERR_NONE) r->failure.kind = IW_ERR_CORRUPT;
        return IW_FAILED;
    }
    png_read_row(r->png, row, NULL);
    r->next_row++;
    if (r->next_row == r->height) png_read_end(r->png, NULL); /* CRCs and chunks after the pixels */
    return 0;
}

int iw_png_reader_error_kind(const iw_png_row_reader *r) { return r->failure.kind; }
const char *iw_png_reader_error(const iw_png_row_reader *r) { return r->failure.text; }

void iw_png_reader_close(iw_png_row_reader *r) {
    if (!r) return;
    png_destroy_read_struct(&r->png, &r->info, NULL);
    free(r);
}
