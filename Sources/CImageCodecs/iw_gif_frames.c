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
 * sub-blocks' payload. */
static size_t skip_sub_blocks(const uint8_t *data, size_t length, size_t at, uint64_t *bytes) {
    for (;;) {
        if (at >= length) return 0;
        uint8_t size = data[at];
        at += 1 + (size_t)size;
        if (size == 0) return at;
        if (bytes) *bytes += size;
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
            if (!next) break;
            if (walk->frames++ == 0) walk->first_pixels = pixels, walk->first_bytes = bytes;
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

typedef struct {
    GifFileType *gif;
    uint8_t *canvas, *saved;
    GifPixelType *line;
} resources;

static void release(resources *held) {
    int error = 0;
    if (held->gif) DGifCloseFile(held->gif, &error);
    free(held->canvas);
    free(held->saved);
    free(held->line);
}

/* Draws the frame whose descriptor giflib just read over the canvas. 0; 1 when the data ends (or
 * breaks) inside it; IW_FAILED with `out` set. */
static int draw_frame(GifFileType *gif, uint8_t *canvas, uint32_t canvas_width, uint32_t canvas_height, int transparent,
                      GifPixelType *line, iw_image *out) {
    GifImageDesc *desc = &gif->Image;
    uint32_t left = (uint32_t)desc->Left, top = (uint32_t)desc->Top;
    uint32_t width = (uint32_t)desc->Width, height = (uint32_t)desc->Height;
    ColorMapObject *map = desc->ColorMap ? desc->ColorMap : gif->SColorMap;
    if (!map || !map->Colors || map->ColorCount <= 0) return fail(out, IW_ERR_CORRUPT, "a frame has no colour table");
    for (uint32_t n = 0; n < height; n++) {
        if (DGifGetLine(gif, line, (int)width) == GIF_ERROR) return 1;
        uint32_t pass = 0;
        uint32_t y = top + (desc->Interlace ? iw_gif_interlaced_row(n, height, &pass) : n);
        if (y >= canvas_height || left >= canvas_width) continue;
        uint32_t visible = left + width > canvas_width ? canvas_width - left : width;
        uint8_t *row = canvas + ((size_t)y * canvas_width + left) * 4;
        for (uint32_t x = 0; x < visible; x++) {
            int index = line[x];
            if (index == transparent) continue;
            uint8_t *pixel = row + (size_t)x * 4;
            if (index >= map->ColorCount) {
                memset(pixel, 0, 4);
            } else {
                GifColorType c = map->Colors[index];
                pixel[0] = c.Red, pixel[1] = c.Green, pixel[2] = c.Blue, pixel[3] = 255;
            }
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
            free(held.line);
            if (!(held.line = malloc((size_t)desc->Width))) {
                status = fail(out, IW_ERR_MEMORY, "out of memory");
                break;
            }
            int drawn = draw_frame(gif, held.canvas, canvas_width, canvas_height, control.TransparentColor, held.line, out);
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
