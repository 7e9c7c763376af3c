/* Incremental JPEG decoding with libjpeg-turbo's libjpeg API: a suspending source manager fed
 * with bytes as they arrive, buffered-image mode for progressive files (a frame per completed
 * scan), rows from the top for baseline files. Every libjpeg call runs under a setjmp in this
 * file, so libjpeg's error exit returns here and never crosses a Swift frame. */
#include "iw_jpeg.h"
#include "iw_color.h"
#include "iw_exif.h"
#include "iw_limits.h"
#include "iw_pixels.h"
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <jerror.h>
#include "iw_jpeg_refine.h"

struct iw_error_mgr {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
};

/* Where a decoder is: reading the header, starting decompression (sizes, buffers), decoding the
 * image data, done, or failed for good. */
enum iw_jpeg_stage { STAGE_FAILED = -1, STAGE_HEADER = 0, STAGE_START = 1, STAGE_DECODING = 2, STAGE_COMPLETE = 3 };

struct iw_jpeg {
    /* First, so that cinfo.client_data (this struct) is also the hook's (iw_jpeg_refine.h). */
    struct iw_refine_hook refine;
    struct jpeg_decompress_struct cinfo;
    struct iw_error_mgr err;
    struct jpeg_source_mgr src;
    uint8_t *buf;
    size_t len, cap, skip;
    int last;
    enum iw_jpeg_stage stage;
    iw_layout layout;
    uint64_t max_pixels;
    int max_scans, scale_denom;
    int multi, last_target, cmyk, inverted_cmyk, orientation;
    /* Whether partial frames are wanted now: when not, completed scans are absorbed but not
     * rendered (the next wanted frame shows all of them). The final frame is always rendered. */
    int partial_frames;
    /* Arithmetic-coded files: libjpeg-turbo's arithmetic decoder cannot suspend mid-scan (it
     * stops with JERR_CANT_SUSPEND), so libjpeg is shown their bytes only up to the end of the last
     * complete scan: the marker that follows a scan's entropy-coded data (its two bytes, which the
     * decoder reads to know the scan ended), never into a scan still arriving. A progressive file
     * then decodes scan by scan, with a partial image per scan; a single-scan file waits for its
     * end. `markers` walks the buffer's structure as bytes arrive (positions in `buf`). */
    struct {
        int arith;        /* an arithmetic-coded frame (SOF9-SOF15) was seen */
        int huffman;      /* a Huffman-coded frame was seen: nothing to hide, the walk stops */
        int in_scan;      /* inside the entropy-coded data of the scan whose SOS is at `sos` */
        size_t at, sos;
    } markers;
    /* Completed scans, rendered or not. */
    int scans_seen;
    /* The coefficient arrays of a progressive file, one per component (captured when libjpeg's
     * coefficient controller asks for them), for previews. */
    jvirt_barray_ptr coef[MAX_COMPONENTS];
    int coef_count, preview_ok;
    /* Counts the feeds that consumed DC coefficients (a scan with Ss 0); the preview, made of DC
     * coefficients alone, is made again only when it changed (AC scans leave it as it is). */
    unsigned dc_generation, preview_generation;
    uint8_t *preview;
    /* A progressive file's final output pass waits until the image is asked for
     * (iw_jpeg_final_into), to be written straight into the caller's memory; then `pixels` no
     * longer holds the current image. */
    int final_pending, final_elsewhere;
    jvirt_barray_ptr (*request_barray)(j_common_ptr, int, boolean, JDIMENSION, JDIMENSION, JDIMENSION);
    uint8_t *pixels;
    JSAMPROW *rows;
    uint8_t *cmyk_row;
    /* Colour management (iw_jpeg_manage_color): a CMYK or YCCK file's rows through its APP2
     * profile, when it has one. */
    int manage_color;
    iw_color_transform *cmyk_transform;
    int channels;
    int error_kind;
    char error[JMSG_LENGTH_MAX + 64];
};

static void on_error_exit(j_common_ptr cinfo) {
    struct iw_error_mgr *err = (struct iw_error_mgr *)cinfo->err;
    longjmp(err->jump, 1);
}

static void on_emit_message(j_common_ptr cinfo, int level) {
    /* Warnings (corrupt but recoverable data) are ignored, as djpeg goes on after them. */
    (void)cinfo;
    (void)level;
}

static void src_init(j_decompress_ptr cinfo) { (void)cinfo; }
static void src_term(j_decompress_ptr cinfo) { (void)cinfo; }

/* Always suspend: more bytes come through iw_jpeg_feed. At the end of input the caller sees that
 * the image is not complete and reports truncation, rather than letting libjpeg pad with gray. */
static boolean src_fill(j_decompress_ptr cinfo) {
    (void)cinfo;
    return FALSE;
}

static void src_skip(j_decompress_ptr cinfo, long count) {
    struct iw_jpeg *d = (struct iw_jpeg *)cinfo->client_data;
    if (count <= 0) return;
    if ((size_t)count <= d->src.bytes_in_buffer) {
        d->src.next_input_byte += count;
        d->src.bytes_in_buffer -= count;
    } else {
        d->skip += (size_t)count - d->src.bytes_in_buffer;
        d->src.next_input_byte += d->src.bytes_in_buffer;
        d->src.bytes_in_buffer = 0;
    }
}

static void fail(struct iw_jpeg *d, int kind, const char *message) {
    d->stage = STAGE_FAILED;
    d->error_kind = kind;
    snprintf(d->error, sizeof d->error, "%s", message);
}

/* Walks the markers of the buffered bytes from where the last walk stopped, and returns how many
 * bytes from the start of `buf` libjpeg may see: all of them, unless the file is arithmetic-coded
 * and a scan's entropy-coded data is still arriving (then up to that scan's SOS marker code). */
static size_t visible_end(struct iw_jpeg *d) {
    const uint8_t *b = d->buf;
    size_t n = d->len, at = d->markers.at;
    while (!d->markers.huffman) {
        if (d->markers.in_scan) {
            /* Entropy-coded data ends at a marker: 0xFF then neither 0x00 (a stuffed byte), a
             * restart marker, nor another 0xFF (fill). */
            while (at + 1 < n && !(b[at] == 0xFF && b[at + 1] != 0x00 && b[at + 1] != 0xFF && (b[at + 1] < 0xD0 || b[at + 1] > 0xD7)))
                at++;
            if (at + 1 >= n) break;
            d->markers.in_scan = 0;
            continue;
        }
        if (at + 2 > n) break;
        if (b[at] != 0xFF) { at++; continue; } /* bytes between markers: libjpeg skips them too */
        unsigned code = b[at + 1];
        if (code == 0xFF) { at++; continue; }
        if (code == 0xD8 || code == 0xD9 || code == 0x01 || (code >= 0xD0 && code <= 0xD7)) { at += 2; continue; }
        if (at + 4 > n) break;
        if ((code >= 0xC9 && code <= 0xCB) || (code >= 0xCD && code <= 0xCF)) d->markers.arith = 1;
        if (code >= 0xC0 && code <= 0xC7 && code != 0xC4 && !d->markers.arith) {
            d->markers.huffman = 1;
            break;
        }
        size_t segment = (size_t)b[at + 2] << 8 | b[at + 3];
        if (code == 0xDA) {
            d->markers.sos = at;
            d->markers.in_scan = 1;
        }
        /* Past `n`, inside a segment still arriving: the next walk resumes after it. */
        at += 2 + segment;
    }
    d->markers.at = at;
    if (!d->markers.arith || d->last || !d->markers.in_scan) return n;
    return d->markers.sos + 2;
}

static int append(struct iw_jpeg *d, const uint8_t *data, size_t length) {
    /* (libjpeg may not have been shown every byte: what it consumed ends at its read position.) */
    size_t consumed = d->src.next_input_byte ? (size_t)(d->src.next_input_byte - d->buf) : 0;
    /* What the marker walk still needs stays in the buffer. */
    size_t kept_from = d->markers.huffman ? consumed : d->markers.at;
    if (d->markers.in_scan && d->markers.sos < kept_from) kept_from = d->markers.sos;
    size_t dropped = consumed < kept_from ? consumed : kept_from;
    if (dropped > 0 && (dropped >= 65536 || dropped * 2 >= d->len)) {
        memmove(d->buf, d->buf + dropped, d->len - dropped);
        d->len -= dropped;
        consumed -= dropped;
        d->markers.at = d->markers.at > dropped ? d->markers.at - dropped : 0;
        if (d->markers.in_scan) d->markers.sos -= dropped;
    }
    if (length > 0) {
        if (d->len + length > d->cap) {
            size_t cap = d->cap ? d->cap : 65536;
            while (cap < d->len + length) cap *= 2;
            uint8_t *grown = realloc(d->buf, cap);
            if (!grown) return 0;
            d->buf = grown;
            d->cap = cap;
        }
        memcpy(d->buf + d->len, data, length);
        d->len += length;
    }
    size_t end = visible_end(d);
    d->src.next_input_byte = d->buf + consumed;
    d->src.bytes_in_buffer = end > consumed ? end - consumed : 0;
    size_t k = d->skip < d->src.bytes_in_buffer ? d->skip : d->src.bytes_in_buffer;
    d->src.next_input_byte += k;
    d->src.bytes_in_buffer -= k;
    d->skip -= k;
    return 1;
}

/* The orientation in an APP1 "Exif" segment (iw_exif.h); 1 for any other APP1 (XMP...). */
static int exif_orientation(const uint8_t *data, size_t length) {
    if (length < 14 || memcmp(data, "Exif\0\0", 6) != 0) return 1;
    return iw_exif_orientation(data + 6, length - 6);
}

/* Calls `visit` with each marker segment before a JPEG's image data (marker, payload, payload
 * size, context) until it returns nonzero, and returns that; 0 at the image data, at the end of
 * the bytes, or at bytes that are not a marker segment. */
static int walk_markers(const uint8_t *data, size_t length, int (*visit)(unsigned, const uint8_t *, size_t, void *),
                        void *context) {
    if (length < 4 || data[0] != 0xFF || data[1] != 0xD8) return 0;
    size_t at = 2;
    while (at + 4 <= length) {
        if (data[at] != 0xFF) return 0;
        unsigned marker = data[at + 1];
        if (marker == 0xFF) { at++; continue; }
        if (marker == 0xDA || marker == 0xD9) return 0; /* image data */
        size_t segment = (size_t)data[at + 2] << 8 | data[at + 3];
        if (segment < 2 || at + 2 + segment > length) return 0;
        int result = visit(marker, data + at + 4, segment - 2, context);
        if (result) return result;
        at += 2 + segment;
    }
    return 0;
}

/* An APP1 segment's EXIF orientation when it is not 1. */
static int orientation_in(unsigned marker, const uint8_t *payload, size_t size, void *context) {
    (void)context;
    if (marker != JPEG_APP0 + 1) return 0;
    int o = exif_orientation(payload, size);
    return o != 1 ? o : 0;
}

int iw_jpeg_scan_orientation(const uint8_t *data, size_t length) {
    int o = walk_markers(data, length, orientation_in, NULL);
    return o ? o : 1;
}

/* The APP2 "ICC_PROFILE" chunks (ICC.1 annex B.4): each numbered 1..count; collected into
 * context (struct icc_chunks) in any order. -1 for a malformed set. */
struct icc_chunks {
    const uint8_t *data[256];
    size_t size[256];
    unsigned count;
};

static int icc_chunk(unsigned marker, const uint8_t *payload, size_t size, void *context) {
    if (marker != JPEG_APP0 + 2 || size < 14 || memcmp(payload, "ICC_PROFILE\0", 12) != 0) return 0;
    struct icc_chunks *chunks = context;
    unsigned number = payload[12], count = payload[13];
    if (number == 0 || count == 0 || number > count || (chunks->count && chunks->count != count) || chunks->data[number - 1]) return -1;
    chunks->count = count;
    chunks->data[number - 1] = payload + 14;
    chunks->size[number - 1] = size - 14;
    return 0;
}

int iw_jpeg_scan_icc(const uint8_t *data, size_t length, uint8_t **icc, size_t *icc_length) {
    *icc = NULL;
    *icc_length = 0;
    struct icc_chunks chunks;
    memset(&chunks, 0, sizeof chunks);
    if (walk_markers(data, length, icc_chunk, &chunks) == -1 || chunks.count == 0) return 0;
    size_t total = 0;
    for (unsigned i = 0; i < chunks.count; i++) {
        if (!chunks.data[i]) return 0; /* a chunk is missing: no profile, as libjpeg's reader says */
        total += chunks.size[i];
    }
    uint8_t *profile = malloc(total ? total : 1);
    if (!profile) return 0;
    for (unsigned i = 0, at = 0; i < chunks.count; at += (unsigned)chunks.size[i], i++) memcpy(profile + at, chunks.data[i], chunks.size[i]);
    *icc = profile;
    *icc_length = total;
    return 1;
}

/* 1 for a progressive frame header (SOF2, 6, 10, 14), -1 for another frame header. */
static int frame_kind(unsigned marker, const uint8_t *payload, size_t size, void *context) {
    (void)payload;
    (void)size;
    (void)context;
    if (marker == 0xC2 || marker == 0xC6 || marker == 0xCA || marker == 0xCE) return 1;
    if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) return -1;
    return 0;
}

int iw_jpeg_has_progressive_frame(const uint8_t *data, size_t length) { return walk_markers(data, length, frame_kind, NULL) == 1; }

/* A frame header's size (SOFn: precision, height, width, components) into context[0..1]. */
static int frame_size(unsigned marker, const uint8_t *payload, size_t size, void *context) {
    if (frame_kind(marker, payload, size, NULL) == 0) return 0;
    if (size < 6) return -1;
    uint32_t *out = context;
    out[0] = (uint32_t)payload[3] << 8 | payload[4];
    out[1] = (uint32_t)payload[1] << 8 | payload[2];
    return 1;
}

int iw_jpeg_probe(const uint8_t *data, size_t length, uint32_t *width, uint32_t *height) {
    uint32_t size[2] = {0, 0};
    int found = walk_markers(data, length, frame_size, size) == 1;
    *width = size[0];
    *height = size[1];
    return found && size[0] > 0 && size[1] > 0 ? 0 : IW_FAILED;
}

iw_jpeg *iw_jpeg_create(iw_layout layout, uint64_t max_pixels, int max_scans, int scale_denom) {
    struct iw_jpeg *volatile d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->layout = layout;
    d->max_pixels = max_pixels;
    d->max_scans = max_scans;
    d->scale_denom = (scale_denom == 2 || scale_denom == 4 || scale_denom == 8) ? scale_denom : 1;
    d->orientation = 1;
    d->partial_frames = 1;
    d->cinfo.err = jpeg_std_error(&d->err.pub);
    d->err.pub.error_exit = on_error_exit;
    d->err.pub.emit_message = on_emit_message;
    if (setjmp(d->err.jump)) {
        free(d);
        return NULL;
    }
    jpeg_create_decompress(&d->cinfo);
    d->cinfo.client_data = d;
    d->src.init_source = src_init;
    d->src.fill_input_buffer = src_fill;
    d->src.skip_input_data = src_skip;
    d->src.resync_to_restart = jpeg_resync_to_restart;
    d->src.term_source = src_term;
    d->cinfo.src = &d->src;
    jpeg_save_markers(&d->cinfo, JPEG_APP0 + 1, 0xFFFF);
    return d;
}

void iw_jpeg_manage_color(iw_jpeg *d, int on) {
    d->manage_color = on;
    /* The APP2 segments are kept only when they will be read. */
    if (on && !setjmp(d->err.jump)) jpeg_save_markers(&d->cinfo, JPEG_APP0 + 2, 0xFFFF);
}

void iw_jpeg_set_refine_mode(iw_jpeg *d, iw_refine_mode mode) { d->refine.mode = mode; }

uint64_t iw_jpeg_refined_blocks(const iw_jpeg *d) { return d->refine.blocks; }

void iw_jpeg_destroy(iw_jpeg *d) {
    if (!d) return;
    if (!setjmp(d->err.jump)) jpeg_destroy_decompress(&d->cinfo);
    free(d->buf);
    free(d->pixels);
    free(d->rows);
    free(d->cmyk_row);
    iw_color_release(d->cmyk_transform);
    free(d->preview);
    free(d);
}

/* CMYK (Adobe files store it inverted) to the output layout. */
static void convert_cmyk(const struct iw_jpeg *d, const uint8_t *in, uint8_t *out, JDIMENSION width) {
    for (JDIMENSION x = 0; x < width; x++, in += 4) {
        unsigned c = in[0], m = in[1], y = in[2], k = in[3];
        if (!d->inverted_cmyk) { c = 255 - c; m = 255 - m; y = 255 - y; k = 255 - k; }
        unsigned r = (c * k + 127) / 255, g = (m * k + 127) / 255, b = (y * k + 127) / 255;
        switch (d->layout) {
        case IW_GRAY: *out++ = (uint8_t)((r * 77 + g * 150 + b * 29 + 128) >> 8); break;
        case IW_RGB: *out++ = (uint8_t)r; *out++ = (uint8_t)g; *out++ = (uint8_t)b; break;
        case IW_RGBA: *out++ = (uint8_t)r; *out++ = (uint8_t)g; *out++ = (uint8_t)b; *out++ = 255; break;
        }
    }
}

/* Reads scanlines until the output is complete or input runs out; returns rows read. */
static JDIMENSION read_rows(struct iw_jpeg *d) {
    JDIMENSION total = 0;
    while (d->cinfo.output_scanline < d->cinfo.output_height) {
        JDIMENSION y = d->cinfo.output_scanline, n;
        if (d->cmyk) {
            JSAMPROW row = d->cmyk_row;
            n = jpeg_read_scanlines(&d->cinfo, &row, 1);
            if (n == 1 && d->cmyk_transform) iw_color_convert(d->cmyk_transform, d->cmyk_row, d->rows[y], d->cinfo.output_width);
            else if (n == 1) convert_cmyk(d, d->cmyk_row, d->rows[y], d->cinfo.output_width);
        } else {
            n = jpeg_read_scanlines(&d->cinfo, d->rows + y, d->cinfo.output_height - y);
        }
        if (n == 0) break;
        total += n;
    }
    return total;
}

static int header(struct iw_jpeg *d) {
    struct jpeg_decompress_struct *c = &d->cinfo;
    char message[IW_LIMIT_MESSAGE_SIZE];
    if (iw_over_pixel_limit(c->image_width, c->image_height, d->max_pixels, message)) {
        fail(d, IW_ERR_LIMIT, message);
        return 0;
    }
    for (jpeg_saved_marker_ptr m = c->marker_list; m; m = m->next) {
        if (m->marker == JPEG_APP0 + 1) {
            int o = exif_orientation(m->data, m->data_length);
            if (o != 1 || d->orientation == 1) d->orientation = o;
        }
    }
    d->cmyk = c->jpeg_color_space == JCS_CMYK || c->jpeg_color_space == JCS_YCCK;
    d->inverted_cmyk = c->saw_Adobe_marker;
    JOCTET *icc = NULL;
    unsigned icc_length = 0;
    if (d->cmyk && d->manage_color && jpeg_read_icc_profile(c, &icc, &icc_length)) {
        d->cmyk_transform = iw_color_from_icc(icc, icc_length, d->inverted_cmyk ? IW_COLOR_FROM_CMYK_INVERTED : IW_COLOR_FROM_CMYK, d->layout);
        free(icc);
    }
    switch (d->layout) {
    case IW_RGBA: d->channels = 4; c->out_color_space = JCS_EXT_RGBA; break;
    case IW_RGB: d->channels = 3; c->out_color_space = JCS_RGB; break;
    case IW_GRAY: d->channels = 1; c->out_color_space = JCS_GRAYSCALE; break;
    }
    if (d->cmyk) c->out_color_space = JCS_CMYK;
    c->scale_num = 1;
    c->scale_denom = (unsigned)d->scale_denom;
    d->multi = jpeg_has_multiple_scans(c);
    c->buffered_image = d->multi ? TRUE : FALSE;
    return 1;
}

/* libjpeg's request_virt_barray, recording the arrays (the coefficient controller asks for one per
 * component, in component order). */
static jvirt_barray_ptr record_barray(j_common_ptr cinfo, int pool, boolean pre_zero, JDIMENSION blocks, JDIMENSION rows,
                                      JDIMENSION access) {
    struct iw_jpeg *d = (struct iw_jpeg *)cinfo->client_data;
    jvirt_barray_ptr array = d->request_barray(cinfo, pool, pre_zero, blocks, rows, access);
    if (d->coef_count < MAX_COMPONENTS) d->coef[d->coef_count++] = array;
    return array;
}

static int allocate(struct iw_jpeg *d) {
    struct jpeg_decompress_struct *c = &d->cinfo;
    size_t stride = (size_t)c->output_width * (size_t)d->channels;
    size_t size = stride * c->output_height;
    /* A sequential file's frame shows its rows as they come, the rest zero; a progressive file's
     * frame is written whole by its first output pass, before anyone reads it (iw_jpeg_rows is 0
     * until then), so it need not be zeroed first (48 MB of memset for a 12 MP image). */
    d->pixels = d->multi ? malloc(size ? size : 1) : calloc(size ? size : 1, 1);
    d->rows = malloc(sizeof(JSAMPROW) * (c->output_height ? c->output_height : 1));
    if (d->cmyk) d->cmyk_row = malloc((size_t)c->output_width * 4);
    if (!d->pixels || !d->rows || (d->cmyk && !d->cmyk_row)) {
        fail(d, IW_ERR_MEMORY, "out of memory for the pixel buffer");
        return 0;
    }
    for (JDIMENSION y = 0; y < c->output_height; y++) d->rows[y] = d->pixels + (size_t)y * stride;
    return 1;
}

int iw_jpeg_feed(iw_jpeg *d, const uint8_t *data, size_t length, int last) {
    if (d->stage == STAGE_FAILED) return IW_FAILED;
    if (d->stage == STAGE_COMPLETE) return 0; /* data after the end of the image is ignored */
    d->last = last;
    if (!append(d, data, length)) {
        fail(d, IW_ERR_MEMORY, "out of memory for the input buffer");
        return IW_FAILED;
    }
    volatile int events = 0;
    if (setjmp(d->err.jump)) {
        char message[JMSG_LENGTH_MAX];
        (*d->cinfo.err->format_message)((j_common_ptr)&d->cinfo, message);
        int code = d->cinfo.err->msg_code;
        int unsupported = code == JERR_BAD_PRECISION || code == JERR_NOT_COMPILED || code == JERR_CONVERSION_NOTIMPL
            || code == JERR_ARITH_NOTIMPL || code == JERR_NO_ARITH_TABLE;
        /* An arithmetic-coded scan cut short by the end of the data stops with "suspension not
         * allowed": it is truncated, not corrupt. */
        fail(d, unsupported ? IW_ERR_UNSUPPORTED : code == JERR_CANT_SUSPEND ? IW_ERR_TRUNCATED : IW_ERR_CORRUPT, message);
        return IW_FAILED;
    }
    struct jpeg_decompress_struct *c = &d->cinfo;
    if (d->stage == STAGE_HEADER) {
        if (jpeg_read_header(c, TRUE) == JPEG_SUSPENDED) goto suspended;
        if (!header(d)) return IW_FAILED;
        d->stage = STAGE_START;
        events |= IW_HEADER;
    }
    if (d->stage == STAGE_START) {
        /* Previews read a progressive file's coefficients (pre-zeroed by libjpeg, so rows no scan
         * reached read as zero): only YCbCr, RGB and grayscale files. */
        if (d->multi && c->progressive_mode && !d->request_barray && !d->cmyk
            && ((c->num_components == 3 && (c->jpeg_color_space == JCS_YCbCr || c->jpeg_color_space == JCS_RGB))
                || (c->num_components == 1 && c->jpeg_color_space == JCS_GRAYSCALE))) {
            d->request_barray = c->mem->request_virt_barray;
            c->mem->request_virt_barray = record_barray;
        }
        if (!jpeg_start_decompress(c)) goto suspended;
        /* The scans are read from here on (a progressive file's first is already started). */
        iw_refine_install(c, &d->refine);
        if (d->request_barray) {
            c->mem->request_virt_barray = d->request_barray;
            d->preview_ok = d->coef_count == c->num_components;
        }
        if (!allocate(d)) return IW_FAILED;
        d->stage = STAGE_DECODING;
    }
    if (d->stage == STAGE_DECODING) {
        if (!d->multi) {
            if (read_rows(d) > 0) events |= IW_PIXELS;
            if (c->output_scanline == c->output_height) {
                /* Complete at its EOI marker. Without it the file is truncated, as for the whole
                 * decoders (TurboJPEG's "Premature end"), even when every row happened to decode. */
                if (jpeg_finish_decompress(c)) {
                    d->stage = STAGE_COMPLETE;
                    events |= IW_COMPLETE;
                } else if (d->last) {
                    fail(d, IW_ERR_TRUNCATED, "the JPEG data ends before its end-of-image marker");
                    return events ? events : IW_FAILED;
                }
            }
        } else {
            int r;
            do {
                int dc = c->Ss == 0;
                r = jpeg_consume_input(c);
                if (dc || c->Ss == 0) d->dc_generation++;
                if (d->max_scans && c->input_scan_number > d->max_scans) {
                    char message[96];
                    snprintf(message, sizeof message, "more than %d progressive scans", d->max_scans);
                    fail(d, IW_ERR_LIMIT, message);
                    return IW_FAILED;
                }
            } while (r != JPEG_SUSPENDED && r != JPEG_REACHED_EOI);
            int complete = jpeg_input_complete(c);
            int target = complete ? c->input_scan_number : c->input_scan_number - 1;
            if (target > d->scans_seen) {
                d->scans_seen = target;
                events |= IW_SCAN;
            }
            if (complete && target >= 1 && target > d->last_target) {
                /* The final frame: rendered when asked for, into the caller's memory. */
                d->final_pending = 1;
                d->last_target = target;
                events |= IW_PIXELS;
            } else if (target >= 1 && target > d->last_target && d->partial_frames) {
                /* Partial images are previews: they skip libjpeg's block smoothing (about a tenth of a
                 * whole decode per pass on a large image; early scans look blockier) and use the fast
                 * integer IDCT (libjpeg lets both change between output passes). The final pass
                 * (iw_jpeg_final_into) uses the accurate IDCT, as a whole-buffer decode does. */
                c->do_block_smoothing = FALSE;
                c->dct_method = JDCT_IFAST;
                jpeg_start_output(c, target);
                read_rows(d);
                jpeg_finish_output(c);
                d->last_target = target;
                events |= IW_PIXELS;
            }
            if (complete) {
                /* jpeg_finish_decompress frees the coefficient arrays with the image's pool. */
                d->preview_ok = 0;
                if (!d->final_pending) jpeg_finish_decompress(c);
                d->stage = STAGE_COMPLETE;
                events |= IW_COMPLETE;
            }
        }
    }
suspended:
    if (d->last && d->stage != STAGE_COMPLETE) {
        fail(d, IW_ERR_TRUNCATED, "the JPEG data ends before the image is complete");
        return events ? events : IW_FAILED;
    }
    return events;
}

int iw_jpeg_error_kind(const iw_jpeg *d) { return d->error_kind; }
const char *iw_jpeg_error(const iw_jpeg *d) { return d->error; }
uint32_t iw_jpeg_image_width(const iw_jpeg *d) { return d->cinfo.image_width; }
uint32_t iw_jpeg_image_height(const iw_jpeg *d) { return d->cinfo.image_height; }
uint32_t iw_jpeg_width(const iw_jpeg *d) { return d->cinfo.output_width; }
uint32_t iw_jpeg_height(const iw_jpeg *d) { return d->cinfo.output_height; }
int iw_jpeg_channels(const iw_jpeg *d) { return d->channels; }
int iw_jpeg_orientation(const iw_jpeg *d) { return d->orientation; }
const uint8_t *iw_jpeg_pixels(const iw_jpeg *d) { return d->final_pending || d->final_elsewhere ? NULL : d->pixels; }
uint32_t iw_jpeg_rows(const iw_jpeg *d) { return d->multi ? (d->last_target ? d->cinfo.output_height : 0) : d->cinfo.output_scanline; }
int iw_jpeg_scans(const iw_jpeg *d) { return d->last_target; }
void iw_jpeg_want_partial_frames(iw_jpeg *d, int wanted) { d->partial_frames = wanted; }
int iw_jpeg_completed_scans(const iw_jpeg *d) { return d->scans_seen; }

int iw_jpeg_preview_size(const iw_jpeg *d, uint32_t *width, uint32_t *height) {
    if (!d->preview_ok || d->stage < STAGE_DECODING) return IW_FAILED;
    *width = (d->cinfo.image_width + 7) / 8;
    *height = (d->cinfo.image_height + 7) / 8;
    return 0;
}

static inline uint8_t clamp8(int v) { return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v; }

static int make_preview(iw_jpeg *d, uint8_t *out, uint32_t width, uint32_t height);

int iw_jpeg_preview(iw_jpeg *d, uint8_t *out) {
    uint32_t width, height;
    if (iw_jpeg_preview_size(d, &width, &height) != 0 || d->scans_seen < 1) return IW_FAILED;
    const size_t size = (size_t)width * height * d->channels;
    if (!d->preview || d->preview_generation != d->dc_generation) {
        if (!d->preview) d->preview = malloc(size);
        if (!d->preview || make_preview(d, d->preview, width, height) != 0) return IW_FAILED;
        d->preview_generation = d->dc_generation;
    }
    memcpy(out, d->preview, size);
    return 0;
}

/* Reads each block's DC coefficient: memory-bound (one cache line per block). */
static int make_preview(iw_jpeg *d, uint8_t *out, uint32_t width, uint32_t height) {
    struct jpeg_decompress_struct *c = &d->cinfo;
    const int components = c->num_components, channels = d->channels;
    /* Row buffers for each component's block averages, then colour conversion; each component's
     * block column for each preview column (no division per pixel). */
    uint8_t *planes = malloc((size_t)width * components);
    JDIMENSION *columns = malloc(sizeof(JDIMENSION) * width * components);
    if (!planes || !columns) {
        free(planes);
        free(columns);
        return IW_FAILED;
    }
    for (int ci = 0; ci < components; ci++) {
        const jpeg_component_info *comp = &c->comp_info[ci];
        for (uint32_t x = 0; x < width; x++) {
            JDIMENSION bx = (JDIMENSION)((uint64_t)x * comp->h_samp_factor / c->max_h_samp_factor);
            columns[(size_t)ci * width + x] = bx < comp->width_in_blocks ? bx : comp->width_in_blocks - 1;
        }
    }
    if (setjmp(d->err.jump)) {
        /* A refused array access: no preview from now on; the decoder itself is unharmed (the
         * access is checked before anything changes). */
        d->preview_ok = 0;
        free(planes);
        free(columns);
        return IW_FAILED;
    }
    for (uint32_t y = 0; y < height; y++) {
        for (int ci = 0; ci < components; ci++) {
            const jpeg_component_info *comp = &c->comp_info[ci];
            uint8_t *plane = planes + (size_t)ci * width;
            JDIMENSION by = (JDIMENSION)((uint64_t)y * comp->v_samp_factor / c->max_v_samp_factor);
            if (by >= comp->height_in_blocks) by = comp->height_in_blocks - 1;
            const JQUANT_TBL *quant = comp->quant_table; /* NULL until the component's first scan */
            if (!quant) {
                memset(plane, 128, width);
                continue;
            }
            JBLOCKARRAY rows = (*c->mem->access_virt_barray)((j_common_ptr)c, d->coef[ci], by, 1, FALSE);
            const int q = quant->quantval[0];
            const JDIMENSION *column = columns + (size_t)ci * width;
            const JBLOCKROW blocks = rows[0];
            for (uint32_t x = 0; x < width; x++) {
                /* libjpeg's 1x1 IDCT: the dequantized DC over 8, rounded, around the centre. */
                plane[x] = clamp8(((blocks[column[x]][0] * q + 4) >> 3) + 128);
            }
        }
        uint8_t *o = out + (size_t)y * width * channels;
        const uint8_t *p0 = planes, *p1 = planes + width, *p2 = planes + 2 * (size_t)width;
        for (uint32_t x = 0; x < width; x++) {
            int r, g, b;
            if (components == 1) {
                r = g = b = p0[x];
            } else if (c->jpeg_color_space == JCS_RGB) {
                r = p0[x], g = p1[x], b = p2[x];
            } else {
                /* jdcolor.c's YCbCr to RGB, in its fixed point (16 bits). */
                const int yy = p0[x], cb = p1[x] - 128, cr = p2[x] - 128;
                r = yy + ((91881 * cr + 32768) >> 16);
                g = yy + ((-22554 * cb - 46802 * cr + 32768) >> 16);
                b = yy + ((116130 * cb + 32768) >> 16);
            }
            if (channels == 1) {
                /* Gray output of a colour file is its luma (Y itself for YCbCr, as libjpeg). */
                *o++ = components == 1 || c->jpeg_color_space == JCS_YCbCr
                    ? p0[x] : iw_luma(clamp8(r), clamp8(g), clamp8(b));
            } else {
                *o++ = clamp8(r), *o++ = clamp8(g), *o++ = clamp8(b);
                if (channels == 4) *o++ = 255;
            }
        }
    }
    free(planes);
    free(columns);
    return 0;
}

int iw_jpeg_final_pending(const iw_jpeg *d) { return d->final_pending; }

int iw_jpeg_final_into(iw_jpeg *d, uint8_t *out) {
    struct jpeg_decompress_struct *c = &d->cinfo;
    const size_t stride = (size_t)c->output_width * (size_t)d->channels;
    if (d->stage != STAGE_COMPLETE || !d->final_pending) return IW_FAILED;
    if (setjmp(d->err.jump)) {
        char message[JMSG_LENGTH_MAX];
        (*c->err->format_message)((j_common_ptr)c, message);
        d->final_pending = 0;
        d->final_elsewhere = 1;
        fail(d, IW_ERR_CORRUPT, message);
        return IW_FAILED;
    }
    /* The final pass uses the accurate IDCT and block smoothing, as a whole-buffer decode does,
     * and has every coefficient: the pixels are a whole decode's. */
    for (JDIMENSION y = 0; y < c->output_height; y++) d->rows[y] = out + (size_t)y * stride;
    d->final_pending = 0;
    d->final_elsewhere = 1;
    c->do_block_smoothing = TRUE;
    c->dct_method = JDCT_ISLOW;
    jpeg_start_output(c, c->input_scan_number);
    read_rows(d);
    jpeg_finish_output(c);
    jpeg_finish_decompress(c);
    return 0;
}
