/* Every frame of a GIF (iw_frames.h): a walk over its blocks that counts the frames without
 * decoding them, and the decode that composites them one by one with giflib's reading API.
 * giflib returns error codes: nothing longjmps here. */
#include "iw_frames.h"
#include "iw_gif_reader.h"
#include "iw_limits.h"
#include <gif_lib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

/* Past a run of data sub-blocks starting at `at` (each a size byte and that many bytes, up to an
 * empty one): where the next block starts, or 0 when the data ends first. `bytes` adds the
 * sub-blocks' payload that is there. */
static size_t skip_sub_blocks(const uint8_t *data, size_t length, size_t at, uint64_t *bytes) {
    for (;;) {
        if (at >= length) return 0;
        uint8_t size = data[at];
        if (bytes) *bytes += at + 1 + size <= length ? size : length - at - 1;
        at += 1 + (size_t)size;
        if (size == 0) return at;
    }
}

int iw_gif_walk_frames(const uint8_t *data, size_t length, iw_gif_walk *walk) {
    memset(walk, 0, sizeof *walk);
    walk->loop_count = -1;
    if (length < 13 || (memcmp(data, "GIF87a", 6) != 0 && memcmp(data, "GIF89a", 6) != 0)) return IW_FAILED;
    size_t at = 13;
    if (data[10] & 0x80) at += 3u << ((data[10] & 7) + 1);
    while (at < length) {
        uint8_t block = data[at];
        if (block == 0x2C) {
            if (at + 10 > length) break;
            uint64_t pixels = (uint64_t)le16(data + at + 5) * le16(data + at + 7);
            uint8_t packed = data[at + 9];
            at += 10;
            if (packed & 0x80) at += 3u << ((packed & 7) + 1);
            at += 1; /* the LZW minimum code size */
            uint64_t bytes = 0;
            size_t next = skip_sub_blocks(data, length, at, &bytes);
            /* (The first frame's size and data are kept even when the data ends inside it.) */
            if (walk->frames == 0 && walk->first_pixels == 0) walk->first_pixels = pixels, walk->first_bytes = bytes;
            if (!next) break;
            walk->frames++;
            walk->compressed_bytes += bytes;
            if (pixels > walk->largest_frame) walk->largest_frame = pixels;
            at = next;
        } else if (block == 0x21) {
            /* An application extension: NETSCAPE2.0 (or ANIMEXTS1.0) holds the loop count. */
            if (at + 19 <= length && data[at + 1] == 0xFF && data[at + 2] == 11 &&
                (memcmp(data + at + 3, "NETSCAPE2.0", 11) == 0 || memcmp(data + at + 3, "ANIMEXTS1.0", 11) == 0) &&
                data[at + 14] >= 3 && data[at + 15] == 1 && walk->loop_count < 0)
                walk->loop_count = (int32_t)le16(data + at + 16);
            size_t next = skip_sub_blocks(data, length, at + 2, NULL);
            if (!next) break;
            at = next;
        } else {
            return 0; /* the trailer (or garbage after the last frame, which decoders ignore) */
        }
    }
    walk->truncated = 1;
    return 0;
}

int iw_gif_read_bytes(GifFileType *gif, GifByteType *into, int count) {
    iw_gif_reader *r = gif->UserData;
    size_t left = r->length - r->at;
    size_t n = count < 0 ? 0 : (size_t)count < left ? (size_t)count : left;
    memcpy(into, r->data + r->at, n);
    r->at += n;
    return (int)n;
}

uint32_t iw_gif_interlaced_row(uint32_t line, uint32_t height, uint32_t *pass) {
    static const uint32_t start[4] = {0, 4, 2, 1}, step[4] = {8, 8, 4, 2};
    for (uint32_t p = 0; p < 4; p++) {
        uint32_t in_pass = height > start[p] ? (height - start[p] + step[p] - 1) / step[p] : 0;
        if (line < in_pass) {
            *pass = p;
            return start[p] + line * step[p];
        }
        line -= in_pass;
    }
    *pass = 4;
    return height;
}

/* A frame's rectangle on the canvas, clipped to it. */
typedef struct {
    uint32_t left, top, width, height;
} rect;

static void clear_rect(uint8_t *canvas, uint32_t canvas_width, rect r) {
    for (uint32_t y = r.top; y < r.top + r.height; y++) memset(canvas + ((size_t)y * canvas_width + r.left) * 4, 0, (size_t)r.width * 4);
}

static int fail(iw_image *out, int kind, const char *message) { return iw_image_fail(out, kind, message); }

static uint8_t *canvas_row(uint8_t *canvas, uint32_t canvas_width, uint32_t y, uint32_t left) {
    return canvas + ((size_t)y * canvas_width + left) * 4;
}

typedef struct {
    GifFileType *gif;
    uint8_t *canvas, *saved;
    uint8_t *indices;   /* a frame's palette indices, in file order */
    size_t indices_capacity;
    uint8_t *codes;     /* a frame's LZW data, its sub-blocks joined */
    size_t codes_capacity;
} resources;

static void release(resources *held) {
    int error = 0;
    if (held->gif) DGifCloseFile(held->gif, &error);
    free(held->canvas);
    free(held->saved);
    free(held->indices);
    free(held->codes);
}

/* The frame's LZW data (after its descriptor): its sub-blocks joined into held->codes. 0, or 1
 * when the data ends inside them (what came is kept), IW_FAILED when out of memory. */
static int read_codes(GifFileType *gif, resources *held, size_t *length, int *code_size) {
    *length = 0;
    GifByteType *block = NULL;
    if (DGifGetCode(gif, code_size, &block) == GIF_ERROR) return 1;
    while (block) {
        size_t size = block[0];
        if (*length + size > held->codes_capacity) {
            size_t capacity = held->codes_capacity ? held->codes_capacity * 2 : 65536;
            while (capacity < *length + size) capacity *= 2;
            uint8_t *grown = realloc(held->codes, capacity);
            if (!grown) return IW_FAILED;
            held->codes = grown, held->codes_capacity = capacity;
        }
        memcpy(held->codes + *length, block + 1, size);
        *length += size;
        if (DGifGetCodeNext(gif, &block) == GIF_ERROR) return 1;
    }
    return 0;
}

/* Draws the frame whose descriptor giflib just read over the canvas. 0; 1 when the data ends (or
 * breaks) inside it; IW_FAILED with `out` set. */
static int draw_frame(GifFileType *gif, resources *held, uint32_t canvas_width, uint32_t canvas_height, int transparent,
                      iw_image *out) {
    GifImageDesc *desc = &gif->Image;
    uint32_t left = (uint32_t)desc->Left, top = (uint32_t)desc->Top;
    uint32_t width = (uint32_t)desc->Width, height = (uint32_t)desc->Height;
    ColorMapObject *map = desc->ColorMap ? desc->ColorMap : gif->SColorMap;
    if (!map || !map->Colors || map->ColorCount <= 0) return fail(out, IW_ERR_CORRUPT, "a frame has no colour table");
    size_t length = 0;
    int code_size = 0;
    int read = read_codes(gif, held, &length, &code_size);
    if (read == IW_FAILED) return fail(out, IW_ERR_MEMORY, "out of memory");
    int corrupt = 0;
    size_t pixels = (size_t)width * height;
    /* (A frame whose blocks the data cuts is cut short even if its indices are all there, as
     * giflib, which the first-frame decode uses, reads it.) */
    if (read == 1 ||
        iw_gif_lzw_decode(code_size, held->codes, length, held->indices, pixels, &corrupt) < pixels)
        return 1;
    uint8_t colors[256][4];
    for (int i = 0; i < 256; i++) {
        if (i < map->ColorCount) {
            GifColorType c = map->Colors[i];
            colors[i][0] = c.Red, colors[i][1] = c.Green, colors[i][2] = c.Blue, colors[i][3] = 255;
        } else {
            memset(colors[i], 0, 4);
        }
    }
    for (uint32_t n = 0; n < height; n++) {
        uint32_t pass = 0;
        uint32_t y = top + (desc->Interlace ? iw_gif_interlaced_row(n, height, &pass) : n);
        if (y >= canvas_height || left >= canvas_width) continue;
        uint32_t visible = left + width > canvas_width ? canvas_width - left : width;
        uint8_t *row = canvas_row(held->canvas, canvas_width, y, left);
        const uint8_t *line = held->indices + (size_t)n * width;
        if (transparent < 0 || transparent > 255) {
            for (uint32_t x = 0; x < visible; x++) memcpy(row + (size_t)x * 4, colors[line[x]], 4);
        } else {
            for (uint32_t x = 0; x < visible; x++)
                if (line[x] != transparent) memcpy(row + (size_t)x * 4, colors[line[x]], 4);
        }
    }
    return 0;
}

int iw_gif_decode_frames(const uint8_t *data, size_t length, uint32_t canvas_width, uint32_t canvas_height, uint32_t max_frames,
                         iw_frame_sink sink, void *context, iw_image *out) {
    memset(out, 0, sizeof *out);
    out->image_width = canvas_width, out->image_height = canvas_height;
    if (canvas_width == 0 || canvas_height == 0) return fail(out, IW_ERR_CORRUPT, "the canvas has 0 pixels");
    iw_gif_reader r = {data, length, 0};
    int error = 0;
    resources held = {0};
    held.gif = DGifOpen(&r, iw_gif_read_bytes, &error);
    if (!held.gif)
        return fail(out, error == D_GIF_ERR_READ_FAILED ? IW_ERR_TRUNCATED : error == D_GIF_ERR_NOT_ENOUGH_MEM ? IW_ERR_MEMORY : IW_ERR_CORRUPT,
                    GifErrorString(error) ? GifErrorString(error) : "not a GIF");
    size_t canvas_bytes = (size_t)canvas_width * canvas_height * 4;
    held.canvas = calloc(canvas_bytes, 1);
    if (!held.canvas) {
        release(&held);
        return fail(out, IW_ERR_MEMORY, "out of memory for the canvas");
    }
    GifFileType *gif = held.gif;
    /* The graphic control block that applies to the next frame. */
    GraphicsControlBlock control = {DISPOSAL_UNSPECIFIED, false, 0, NO_TRANSPARENT_COLOR};
    uint32_t frames = 0;
    int status = 0, ended = 0;
    while (status == 0 && !ended) {
        GifRecordType type;
        if (DGifGetRecordType(gif, &type) == GIF_ERROR) break;
        if (type == EXTENSION_RECORD_TYPE) {
            int code = 0;
            GifByteType *block = NULL;
            if (DGifGetExtension(gif, &code, &block) == GIF_ERROR) break;
            if (code == GRAPHICS_EXT_FUNC_CODE && block) DGifExtensionToGCB(block[0], block + 1, &control);
            int broken = 0;
            while (block) {
                if (DGifGetExtensionNext(gif, &block) == GIF_ERROR) {
                    broken = 1;
                    break;
                }
            }
            if (broken) break;
        } else if (type == IMAGE_DESC_RECORD_TYPE) {
            if (DGifGetImageDesc(gif) == GIF_ERROR) break;
            GifImageDesc *desc = &gif->Image;
            if (desc->Width <= 0 || desc->Height <= 0) {
                status = fail(out, IW_ERR_CORRUPT, frames == 0 ? "the first frame has 0 pixels" : "a frame has 0 pixels");
                break;
            }
            rect area = {(uint32_t)desc->Left, (uint32_t)desc->Top, (uint32_t)desc->Width, (uint32_t)desc->Height};
            if (area.left >= canvas_width || area.top >= canvas_height) {
                area.width = area.height = 0;
            } else {
                if (area.left + area.width > canvas_width) area.width = canvas_width - area.left;
                if (area.top + area.height > canvas_height) area.height = canvas_height - area.top;
            }
            if (control.DisposalMode == DISPOSE_PREVIOUS) {
                if (!held.saved && !(held.saved = malloc(canvas_bytes))) {
                    status = fail(out, IW_ERR_MEMORY, "out of memory for the canvas");
                    break;
                }
                memcpy(held.saved, held.canvas, canvas_bytes);
            }
            /* (16 bytes more: the LZW decoder's short copies may move past the last index.) */
            size_t frame_bytes = (size_t)desc->Width * (size_t)desc->Height + 16;
            if (frame_bytes > held.indices_capacity) {
                free(held.indices);
                if (!(held.indices = malloc(frame_bytes))) {
                    held.indices_capacity = 0;
                    status = fail(out, IW_ERR_MEMORY, "out of memory");
                    break;
                }
                held.indices_capacity = frame_bytes;
            }
            int drawn = draw_frame(gif, &held, canvas_width, canvas_height, control.TransparentColor, out);
            if (drawn == IW_FAILED) {
                status = IW_FAILED;
                break;
            }
            if (drawn == 1) {
                /* Cut short: the first frame fails the image; a later one ends the animation. */
                if (frames == 0)
                    status = fail(out, r.at >= r.length ? IW_ERR_TRUNCATED : IW_ERR_CORRUPT,
                                  r.at >= r.length ? "the data ends inside the first frame" : "the first frame's data is corrupt");
                break;
            }
            uint32_t delay = control.DelayTime > 0 ? (uint32_t)control.DelayTime * 10 : 0;
            if (sink(context, held.canvas, frames, delay) != 0) {
                status = IW_FAILED;
                fail(out, IW_ERR_LIMIT, "stopped by the caller");
                break;
            }
            frames++;
            if (control.DisposalMode == DISPOSE_BACKGROUND) {
                clear_rect(held.canvas, canvas_width, area);
            } else if (control.DisposalMode == DISPOSE_PREVIOUS) {
                memcpy(held.canvas, held.saved, canvas_bytes);
            }
            control = (GraphicsControlBlock){DISPOSAL_UNSPECIFIED, false, 0, NO_TRANSPARENT_COLOR};
            if (max_frames && frames >= max_frames) ended = 1;
        } else if (type == TERMINATE_RECORD_TYPE) {
            ended = 1;
        } else {
            break; /* an unknown block: what came before it stands */
        }
    }
    release(&held);
    if (status != 0) return status;
    if (frames == 0) return fail(out, r.at >= r.length ? IW_ERR_TRUNCATED : IW_ERR_CORRUPT, "no frame in the file");
    out->width = canvas_width, out->height = canvas_height, out->channels = 4;
    return 0;
}
