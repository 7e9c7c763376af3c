/* Whole-buffer decoding of progressive (multi-scan) JPEGs with libjpeg, for a lower peak memory
 * than TurboJPEG gives them.
 *
 * A multi-scan file is decoded into a whole-image coefficient buffer (two bytes per coefficient:
 * 36 MB for a 12 MP 4:2:0 photo) before its single output pass turns it into pixels, so a plain
 * decode holds that buffer and the whole bitmap at once. The output pass reads
 * the coefficient rows top to bottom and never goes back above the rows it asks for, so here the
 * rows it has left behind are handed back to the kernel (MADV_DONTNEED) while the bitmap fills:
 * the peak is about the bitmap alone. That pays only where the bitmap's pages are not in memory
 * yet (a fresh allocation, faulted in as the output pass writes it); when they are (memory the
 * allocator kept from an earlier image, see BitmapMemory), the peak was reached while the scans
 * were read, and handing rows back would only make the next decode fault them in again. Small buffers are kept too (see IW_RELEASE_MIN_BYTES). The pixels are TurboJPEG's (same library, same defaults:
 * accurate IDCT, fancy upsampling), and the same warnings are accepted or refused. The refinement
 * scans, most of a progressive file's time, are decoded by iw_jpeg_refine.c (the same
 * coefficients, faster).
 *
 * libjpeg's errors longjmp back to this file's frame only. */
#include "iw_whole.h"
#include "iw_jpeg_refine.h"
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <jerror.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#define IW_CAN_RELEASE 1
#else
#define IW_CAN_RELEASE 0
#endif

/* Coefficient buffers from this size on are handed back (4 MiB: 1.4 megapixels at 4:2:0). */
#define IW_RELEASE_MIN_BYTES ((size_t)4 << 20)

typedef JBLOCKARRAY (*iw_access_fn)(j_common_ptr, jvirt_barray_ptr, JDIMENSION, JDIMENSION, boolean);

/* One coefficient array (one per component): where each of its rows lies, seen while the input
 * scans fill them, and how far the output pass has released it. */
struct iw_coef_rows {
    jvirt_barray_ptr array;
    JBLOCKROW *rows;
    size_t row_bytes;      /* 0 until known; SIZE_MAX if it cannot be known */
    JDIMENSION released;   /* rows [0, released) are dead */
    uintptr_t dead_end;    /* end address of the last released row */
    uintptr_t freed_end;   /* page-aligned end of what was handed back */
};

struct iw_whole_jpeg {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    struct jpeg_progress_mgr progress;
    int max_scans;
    int scans_exceeded;
    int premature_end;
    int output_started;
    int release;          /* hand rows back in the output pass */
    JDIMENSION max_rows;  /* rows in the tallest coefficient array */
    size_t page;
    size_t released;
    iw_access_fn access;
    struct iw_coef_rows arrays[MAX_COMPONENTS];
    int array_count;
    struct iw_refine_hook refine;
};

static void whole_error_exit(j_common_ptr cinfo) {
    struct iw_whole_jpeg *w = (struct iw_whole_jpeg *)cinfo->err;
    longjmp(w->jump, 1);
}

/* Warnings (corrupt but recoverable data) are accepted, as djpeg and the TurboJPEG path do; the
 * end of the data before the end of the image is remembered and reported as truncation. */
static void whole_emit_message(j_common_ptr cinfo, int level) {
    struct iw_whole_jpeg *w = (struct iw_whole_jpeg *)cinfo->err;
    if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) w->premature_end = 1;
}

/* Called before each step of reading the scans. libjpeg-turbo's advice for untrusted files: a cap
 * on scans, each of which walks the whole image. The first call (the decoder's modules exist by
 * then) hooks the refinement scans' decoder (iw_jpeg_refine.c). */
static void whole_progress(j_common_ptr cinfo) {
    struct iw_whole_jpeg *w = (struct iw_whole_jpeg *)cinfo->err;
    j_decompress_ptr d = (j_decompress_ptr)cinfo;
    if (w->max_scans > 0 && d->input_scan_number > w->max_scans) {
        w->scans_exceeded = 1;
        ERREXIT(cinfo, JERR_NOT_COMPILED); /* any error: the message is replaced by the limit's */
    }
    iw_refine_install(d, &w->refine);
}

static struct iw_coef_rows *rows_of(struct iw_whole_jpeg *w, jvirt_barray_ptr array) {
    for (int i = 0; i < w->array_count; i++)
        if (w->arrays[i].array == array) return &w->arrays[i];
    if (w->array_count == MAX_COMPONENTS) return NULL;
    struct iw_coef_rows *r = &w->arrays[w->array_count];
    memset(r, 0, sizeof *r);
    r->rows = calloc(w->max_rows, sizeof(JBLOCKROW));
    if (!r->rows) return NULL;
    r->array = array;
    w->array_count++;
    return r;
}

/* Hands back the rows before `start`, which the output pass will not read again. Each row lies
 * whole inside memory libjpeg allocated for this array; runs of adjacent rows are released as
 * one span, shrunk to whole pages, so nothing outside the dead rows is touched. */
static void release_rows(struct iw_whole_jpeg *w, struct iw_coef_rows *r, JDIMENSION start, size_t row_bytes) {
#if IW_CAN_RELEASE
    while (r->released < start) {
        JDIMENSION i = r->released;
        if (!r->rows[i]) return;
        uintptr_t begin = (uintptr_t)r->rows[i];
        uintptr_t from = begin == r->dead_end ? r->freed_end : (begin + w->page - 1) & ~(uintptr_t)(w->page - 1);
        uintptr_t end = begin + row_bytes;
        for (i++; i < start && r->rows[i] && (uintptr_t)r->rows[i] == end; i++) end += row_bytes;
        uintptr_t to = end & ~(uintptr_t)(w->page - 1);
        if (to > from && madvise((void *)from, to - from, MADV_DONTNEED) == 0) w->released += to - from;
        r->released = i;
        r->dead_end = end;
        r->freed_end = to > from ? to : from;
    }
#else
    (void)w; (void)r; (void)start; (void)row_bytes;
#endif
}

/* The size of one row: the smallest positive distance between two consecutive rows. libjpeg
 * allocates an array in chunks of many rows each, so within a chunk that is exactly a row; a gap
 * between chunks is never smaller. */
static size_t row_size(const struct iw_whole_jpeg *w, const struct iw_coef_rows *r) {
    size_t best = SIZE_MAX;
    for (JDIMENSION i = 0; i + 1 < w->max_rows; i++) {
        if (!r->rows[i] || !r->rows[i + 1] || r->rows[i + 1] <= r->rows[i]) continue;
        size_t gap = (size_t)((uintptr_t)r->rows[i + 1] - (uintptr_t)r->rows[i]);
        if (gap < best) best = gap;
    }
    return best == SIZE_MAX || best % sizeof(JBLOCK) != 0 ? SIZE_MAX : best;
}

static JBLOCKARRAY whole_access(j_common_ptr cinfo, jvirt_barray_ptr array, JDIMENSION start, JDIMENSION count,
                                boolean writable) {
    struct iw_whole_jpeg *w = (struct iw_whole_jpeg *)cinfo->err;
    JBLOCKARRAY rows = w->access(cinfo, array, start, count, writable);
    struct iw_coef_rows *r = rows_of(w, array);
    if (!r || count == 0 || start + count > w->max_rows) return rows;
    if (!w->output_started) {
        /* The input scans: note where rows are. */
        for (JDIMENSION i = 0; i < count; i++) r->rows[start + i] = rows[i];
    } else if (!writable && w->release && r->rows[start] == rows[0]) {
        /* The output pass, reading the rows noted before. */
        if (r->row_bytes == 0) r->row_bytes = row_size(w, r);
        if (r->row_bytes != SIZE_MAX) release_rows(w, r, start, r->row_bytes);
    }
    return rows;
}

static void destroy_decoder(j_decompress_ptr cinfo, struct iw_whole_jpeg *w, JSAMPROW *rows) {
    jpeg_destroy_decompress(cinfo);
    for (int i = 0; i < w->array_count; i++) free(w->arrays[i].rows);
    free(rows);
    free(w);
}

/* Whether most of [memory, memory + size) is resident. */
static int mostly_resident(const uint8_t *memory, size_t size, size_t page) {
#if IW_CAN_RELEASE
    uintptr_t from = (uintptr_t)memory & ~(uintptr_t)(page - 1);
    uintptr_t to = ((uintptr_t)memory + size + page - 1) & ~(uintptr_t)(page - 1);
    size_t pages = (to - from) / page, resident = 0;
    unsigned char *map = malloc(pages ? pages : 1);
    if (!map) return 1;
    if (mincore((void *)from, to - from, map) != 0) {
        free(map);
        return 1;
    }
    for (size_t i = 0; i < pages; i++) resident += map[i] & 1;
    free(map);
    return resident * 2 >= pages;
#else
    (void)memory; (void)size; (void)page;
    return 1;
#endif
}

int iw_jpeg_decode_whole_into(const uint8_t *data, size_t length, iw_layout layout, int scale_denom, int max_scans,
                              uint8_t *pixels, iw_image *out) {
    return iw_jpeg_decode_whole_with(data, length, layout, scale_denom, max_scans, IW_REFINE_FASTEST, pixels, out);
}

int iw_jpeg_decode_whole_with(const uint8_t *data, size_t length, iw_layout layout, int scale_denom, int max_scans,
                              iw_refine_mode mode, uint8_t *pixels, iw_image *out) {
    struct jpeg_decompress_struct cinfo;
    struct iw_whole_jpeg *volatile w = calloc(1, sizeof *w);
    JSAMPROW *volatile rows = NULL;
    if (!w) {
        snprintf(out->error, sizeof out->error, "out of memory for the JPEG decoder");
        out->error_kind = IW_ERR_MEMORY;
        return IW_FAILED;
    }
    cinfo.err = jpeg_std_error(&w->pub);
    w->pub.error_exit = whole_error_exit;
    w->pub.emit_message = whole_emit_message;
    w->max_scans = max_scans;
    w->refine.mode = mode;
#if IW_CAN_RELEASE
    w->page = (size_t)sysconf(_SC_PAGESIZE);
#endif
    if (setjmp(w->jump)) {
        char message[JMSG_LENGTH_MAX];
        (*cinfo.err->format_message)((j_common_ptr)&cinfo, message);
        int code = cinfo.err->msg_code;
        if (w->scans_exceeded) {
            out->error_kind = IW_ERR_LIMIT;
            snprintf(out->error, sizeof out->error, "more than %d progressive scans", w->max_scans);
        } else {
            int unsupported = code == JERR_BAD_PRECISION || code == JERR_NOT_COMPILED || code == JERR_CONVERSION_NOTIMPL
                || code == JERR_ARITH_NOTIMPL || code == JERR_NO_ARITH_TABLE;
            out->error_kind = unsupported ? IW_ERR_UNSUPPORTED : IW_ERR_CORRUPT;
            snprintf(out->error, sizeof out->error, "%s", message);
        }
        destroy_decoder(&cinfo, w, rows);
        return IW_FAILED;
    }
    cinfo.client_data = &w->refine; /* kept by jpeg_create_decompress; the hook's way back (iw_jpeg_refine.h) */
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, (unsigned long)length);
    jpeg_read_header(&cinfo, TRUE);
    switch (layout) {
    case IW_RGBA: cinfo.out_color_space = JCS_EXT_RGBA; break;
    case IW_RGB: cinfo.out_color_space = JCS_RGB; break;
    case IW_GRAY: cinfo.out_color_space = JCS_GRAYSCALE; break;
    }
    cinfo.scale_num = 1;
    cinfo.scale_denom = (unsigned)((scale_denom == 2 || scale_denom == 4 || scale_denom == 8) ? scale_denom : 1);
    w->progress.progress_monitor = whole_progress;
    cinfo.progress = &w->progress;
    size_t coefficient_bytes = 0;
    for (int ci = 0; ci < cinfo.num_components; ci++) {
        const jpeg_component_info *c = &cinfo.comp_info[ci];
        JDIMENSION tall = (c->height_in_blocks + c->v_samp_factor - 1) / c->v_samp_factor * c->v_samp_factor;
        JDIMENSION wide = (c->width_in_blocks + c->h_samp_factor - 1) / c->h_samp_factor * c->h_samp_factor;
        if (tall > w->max_rows) w->max_rows = tall;
        coefficient_bytes += (size_t)tall * wide * sizeof(JBLOCK);
    }
    /* Handed-back pages fault in again, zeroed, on the next decode: worth it where the memory is
     * large, not for small images. */
    if (w->page > 0 && coefficient_bytes >= IW_RELEASE_MIN_BYTES && jpeg_has_multiple_scans(&cinfo)) {
        w->access = cinfo.mem->access_virt_barray;
        cinfo.mem->access_virt_barray = whole_access;
    }
    jpeg_start_decompress(&cinfo); /* reads every scan into the coefficient buffer */
    w->output_started = 1;
    if (cinfo.output_width != out->width || cinfo.output_height != out->height
        || cinfo.output_components != out->channels) {
        snprintf(out->error, sizeof out->error, "libjpeg's output size differs from TurboJPEG's header");
        out->error_kind = IW_ERR_CORRUPT;
        destroy_decoder(&cinfo, w, NULL);
        return IW_FAILED;
    }
    size_t stride = (size_t)cinfo.output_width * (size_t)cinfo.output_components;
    w->release = w->access && !mostly_resident(pixels, stride * cinfo.output_height, w->page);
    rows = malloc(sizeof(JSAMPROW) * cinfo.output_height);
    if (!rows) ERREXIT1(&cinfo, JERR_OUT_OF_MEMORY, 0);
    for (JDIMENSION y = 0; y < cinfo.output_height; y++) rows[y] = pixels + (size_t)y * stride;
    while (cinfo.output_scanline < cinfo.output_height)
        jpeg_read_scanlines(&cinfo, rows + cinfo.output_scanline, cinfo.output_height - cinfo.output_scanline);
    jpeg_finish_decompress(&cinfo);
    int premature = w->premature_end;
    out->released = w->released;
    out->refined_blocks = w->refine.blocks;
    destroy_decoder(&cinfo, w, rows);
    if (premature) {
        out->error_kind = IW_ERR_TRUNCATED;
        snprintf(out->error, sizeof out->error, "Premature end of JPEG file");
        return IW_FAILED;
    }
    return 0;
}
