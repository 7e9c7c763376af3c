/* GIF with giflib's low-level reading API (DGif*): the first frame composited on a transparent
 * canvas, frames counted without decoding them, the loop count. giflib returns error codes:
 * nothing longjmps here. */
#include "iw_gif.h"
#include "iw_gif_reader.h"
#include "iw_jpeg.h"
#include "iw_limits.h"
#include <gif_lib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

int iw_gif_canvas(const uint8_t *data, size_t length, uint32_t *width, uint32_t *height, uint32_t *frame_width_out,
                  uint32_t *frame_height_out) {
    if (length < 6) return 1;
    if (memcmp(data, "GIF87a", 6) != 0 && memcmp(data, "GIF89a", 6) != 0) return IW_FAILED;
    if (length < 13) return 1;
    uint32_t screen_width = le16(data + 6), screen_height = le16(data + 8);
    size_t at = 13;
    if (data[10] & 0x80) at += 3u << ((data[10] & 7) + 1);
    for (;;) {
        if (at >= length) return 1;
        uint8_t block = data[at];
        if (block == 0x2C) { /* image descriptor: left, top, width, height */
            if (at + 9 > length) return 1;
            uint32_t left = le16(data + at + 1), top = le16(data + at + 3);
            uint32_t frame_width = le16(data + at + 5), frame_height = le16(data + at + 7);
            if (frame_width == 0 || frame_height == 0) return IW_FAILED;
            *width = screen_width > left + frame_width ? screen_width : left + frame_width;
            *height = screen_height > top + frame_height ? screen_height : top + frame_height;
            if (frame_width_out) *frame_width_out = frame_width;
            if (frame_height_out) *frame_height_out = frame_height;
            return 0;
        } else if (block == 0x21) { /* extension: label, then sub-blocks up to an empty one */
            at += 2;
            for (;;) {
                if (at >= length) return 1;
                uint8_t size = data[at];
                at += 1 + (size_t)size;
                if (size == 0) break;
            }
        } else {
            return IW_FAILED; /* the trailer, or garbage, before any image */
        }
    }
}

static int fail(iw_gif_result *out, int kind, const char *message) {
    out->error_kind = kind;
    snprintf(out->error, sizeof out->error, "%s", message);
    return IW_FAILED;
}

/* A giflib call failed: the walk stops there; whether the data ran out is kept. Returns 1. */
static int stopped(const GifFileType *gif, int *ran_out, int *done) {
    *ran_out = gif->Error == D_GIF_ERR_READ_FAILED;
    *done = 1;
    return 1;
}

/* How many rows below a row of each pass are repeated from it until their own pass comes. */
static const uint32_t repeat_below[4] = {7, 3, 1, 0};

int iw_gif_decode(const uint8_t *data, size_t length, int complete, uint64_t max_pixels, uint32_t max_frames, int decode_first,
                  uint8_t *canvas, uint32_t canvas_width, uint32_t canvas_height, iw_gif_result *out) {
    memset(out, 0, sizeof *out);
    out->loop_count = -1;
    iw_gif_reader r = {data, length, 0};
    int error = 0;
    GifFileType *gif = DGifOpen(&r, iw_gif_read_bytes, &error);
    if (!gif) {
        if (!complete && error == D_GIF_ERR_READ_FAILED) return 0;
        return fail(out, error == D_GIF_ERR_READ_FAILED ? IW_ERR_TRUNCATED : error == D_GIF_ERR_NOT_ENOUGH_MEM ? IW_ERR_MEMORY : IW_ERR_CORRUPT,
                    GifErrorString(error) ? GifErrorString(error) : "not a GIF");
    }
    int transparent = -1;    /* from the graphics control block before the first image */
    GifPixelType *line = NULL;
    int status = 0;
    int ran_out = 0;         /* the data ended where more was due */
    int in_netscape = 0;
    for (int done = 0; !done && status == 0;) {
        GifRecordType type;
        if (DGifGetRecordType(gif, &type) == GIF_ERROR) {
            ran_out = gif->Error == D_GIF_ERR_READ_FAILED;
            break;
        }
        switch (type) {
        case EXTENSION_RECORD_TYPE: {
            int code = 0;
            GifByteType *block = NULL;
            if (DGifGetExtension(gif, &code, &block) == GIF_ERROR && stopped(gif, &ran_out, &done)) break;
            in_netscape = 0;
            if (code == GRAPHICS_EXT_FUNC_CODE && block && out->frame_count == 0) {
                GraphicsControlBlock gcb;
                if (DGifExtensionToGCB(block[0], block + 1, &gcb) == GIF_OK) transparent = gcb.TransparentColor;
            } else if (code == APPLICATION_EXT_FUNC_CODE && block && block[0] == 11 &&
                       (memcmp(block + 1, "NETSCAPE2.0", 11) == 0 || memcmp(block + 1, "ANIMEXTS1.0", 11) == 0)) {
                in_netscape = 1;
            }
            for (;;) {
                if (DGifGetExtensionNext(gif, &block) == GIF_ERROR && stopped(gif, &ran_out, &done)) break;
                if (!block) break;
                if (in_netscape && block[0] >= 3 && block[1] == 1 && out->loop_count < 0) out->loop_count = (int32_t)le16(block + 2);
            }
            break;
        }
        case IMAGE_DESC_RECORD_TYPE: {
            if (DGifGetImageDesc(gif) == GIF_ERROR && stopped(gif, &ran_out, &done)) break;
            out->frame_count++;
            if (max_frames && out->frame_count > max_frames) {
                char message[256];
                snprintf(message, sizeof message, "animation of more than %u frames exceeds the limit of %u frames", max_frames, max_frames);
                status = fail(out, IW_ERR_LIMIT, message);
                break;
            }
            GifImageDesc *desc = &gif->Image;
            if (out->frame_count > 1 || !decode_first) {
                if (out->frame_count == 1) {
                    out->first_complete = 1;
                    out->rows = (uint32_t)desc->Height;
                    out->interlaced = desc->Interlace;
                    out->passes = desc->Interlace ? 4 : 0;
                    out->filled = canvas_height;
                }
                /* Not decoded: its compressed blocks are skipped. */
                int size = 0;
                GifByteType *code = NULL;
                if (DGifGetCode(gif, &size, &code) == GIF_ERROR && stopped(gif, &ran_out, &done)) break;
                while (code) {
                    if (DGifGetCodeNext(gif, &code) == GIF_ERROR && stopped(gif, &ran_out, &done)) break;
                }
                break;
            }
            uint32_t left = (uint32_t)desc->Left, top = (uint32_t)desc->Top;
            uint32_t width = (uint32_t)desc->Width, height = (uint32_t)desc->Height;
            char message[IW_LIMIT_MESSAGE_SIZE];
            if (width == 0 || height == 0) {
                status = fail(out, IW_ERR_CORRUPT, "the first frame has 0 pixels");
                break;
            }
            if (iw_over_pixel_limit(width, height, max_pixels, message)) {
                status = fail(out, IW_ERR_LIMIT, message);
                break;
            }
            if (left + width > canvas_width || top + height > canvas_height) {
                status = fail(out, IW_ERR_CORRUPT, "the first frame lies outside its canvas");
                break;
            }
            ColorMapObject *map = desc->ColorMap ? desc->ColorMap : gif->SColorMap;
            if (!map || !map->Colors || map->ColorCount <= 0) {
                status = fail(out, IW_ERR_CORRUPT, "the first frame has no colour table");
                break;
            }
            out->interlaced = desc->Interlace;
            line = malloc(width);
            if (!line) {
                status = fail(out, IW_ERR_MEMORY, "out of memory");
                break;
            }
            size_t stride = (size_t)canvas_width * 4;
            for (uint32_t n = 0; n < height; n++) {
                if (DGifGetLine(gif, line, (int)width) == GIF_ERROR) {
                    ran_out = gif->Error == D_GIF_ERR_READ_FAILED || r.at >= r.length;
                    done = 1;
                    break;
                }
                uint32_t pass = 0;
                uint32_t y = desc->Interlace ? iw_gif_interlaced_row(n, height, &pass) : n;
                uint8_t *row = canvas + (size_t)(top + y) * stride + (size_t)left * 4;
                /* The first frame paints over nothing: a transparent pixel is written as such, so
                 * that a repeated row is replaced whole by its own pass. */
                for (uint32_t x = 0; x < width; x++) {
                    uint8_t *pixel = row + (size_t)x * 4;
                    int index = line[x];
                    if (index == transparent || index >= map->ColorCount) {
                        memset(pixel, 0, 4);
                    } else {
                        GifColorType c = map->Colors[index];
                        pixel[0] = c.Red, pixel[1] = c.Green, pixel[2] = c.Blue, pixel[3] = 255;
                    }
                }
                if (desc->Interlace) {
                    for (uint32_t k = 1; k <= repeat_below[pass] && y + k < height; k++)
                        memcpy(row + (size_t)k * stride, row, (size_t)width * 4);
                    out->passes = pass;
                }
                out->rows = n + 1;
            }
            free(line);
            line = NULL;
            if (out->rows == height) {
                out->first_complete = 1;
                out->passes = desc->Interlace ? 4 : 0;
                out->filled = canvas_height;
            } else if (desc->Interlace) {
                /* Rows of the first pass reach 8 rows each; after it, every row shows something. */
                uint32_t pass = 0;
                iw_gif_interlaced_row(out->rows, height, &pass);
                uint32_t reach = pass == 0 ? out->rows * 8 : height;
                out->passes = pass;
                out->filled = top + (reach < height ? reach : height);
            } else {
                out->filled = top + out->rows;
            }
            break;
        }
        case TERMINATE_RECORD_TYPE:
            done = 1;
            break;
        default:
            status = fail(out, IW_ERR_CORRUPT, "unknown block");
            break;
        }
    }
    int close_error = 0;
    DGifCloseFile(gif, &close_error);
    if (status != 0) return status;
    if (out->frame_count == 0) {
        if (!complete) return 0;
        return fail(out, ran_out ? IW_ERR_TRUNCATED : IW_ERR_CORRUPT, ran_out ? "the data ends before the first frame" : "no image in the file");
    }
    if (!out->first_complete) {
        if (!complete && ran_out) return 0;
        return fail(out, ran_out ? IW_ERR_TRUNCATED : IW_ERR_CORRUPT,
                    ran_out ? "the data ends inside the first frame" : "the first frame's data is corrupt");
    }
    /* Frames after the first: a file cut or damaged there still shows its first frame, as browsers
     * do; it counts the frames it holds. */
    return 0;
}
