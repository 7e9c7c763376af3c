/* GIF encoding with giflib's writing API (EGif*): each frame quantized to its own palette by
 * giflib's median cut, transparency as one index, a NETSCAPE2.0 block for the loops. giflib
 * returns error codes: nothing longjmps here. */
#include "iw_anim_encode.h"
#include "iw_whole.h"
#include <gif_lib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint8_t *bytes;
    size_t length, capacity;
    int failed;
} sink;

static int write_bytes(GifFileType *gif, const GifByteType *data, int count) {
    sink *s = gif->UserData;
    if (count <= 0) return 0;
    if (s->length + (size_t)count > s->capacity) {
        size_t capacity = s->capacity ? s->capacity * 2 : 65536;
        while (capacity < s->length + (size_t)count) capacity *= 2;
        uint8_t *grown = realloc(s->bytes, capacity);
        if (!grown) {
            s->failed = 1;
            return 0;
        }
        s->bytes = grown, s->capacity = capacity;
    }
    memcpy(s->bytes + s->length, data, (size_t)count);
    s->length += (size_t)count;
    return count;
}

/* A frame with at most `limit` colours (its visible pixels') takes them as its palette exactly:
 * 1 with `indices` and `map` filled, 0 when it has more. An open-addressing table of 512 slots. */
static int exact_palette(const uint8_t *pixels, int channels, size_t count, int transparent, int limit, uint8_t *indices,
                         GifColorType *map, int *colors) {
    uint32_t keys[512];
    int16_t slots[512];
    memset(slots, -1, sizeof slots);
    int used = 0;
    for (size_t i = 0; i < count; i++) {
        const uint8_t *p = pixels + i * (size_t)channels;
        if (transparent && p[3] < 128) {
            indices[i] = 255;
            continue;
        }
        uint32_t key = channels < 3 ? (uint32_t)p[0] * 0x010101u : (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
        uint32_t slot = (key * 2654435761u) >> 23;
        while (slots[slot] >= 0 && keys[slot] != key) slot = (slot + 1) & 511;
        if (slots[slot] < 0) {
            if (used == limit) return 0;
            slots[slot] = (int16_t)used, keys[slot] = key;
            map[used] = (GifColorType){(GifByteType)(key >> 16), (GifByteType)(key >> 8), (GifByteType)key};
            used++;
        }
        indices[i] = (uint8_t)slots[slot];
    }
    *colors = used;
    return 1;
}

/* Frame i quantized: `indices` (width * height) and `map` (256 entries, `colors` used). Pixels
 * less than half opaque take index 255, the transparent one, when `transparent`. Up to 255 (256)
 * colours are kept exactly; more go through giflib's median cut (on 5 bits a channel), refined by
 * two k-means steps on the pixels themselves. 0 or IW_FAILED. */
static int quantize(const uint8_t *pixels, int channels, uint32_t width, uint32_t height, int transparent, uint8_t *indices,
                    GifColorType *map, int *colors, uint8_t *planes) {
    size_t count = (size_t)width * height;
    if (exact_palette(pixels, channels, count, transparent, transparent ? 255 : 256, indices, map, colors)) return 0;
    uint8_t *r = planes, *g = planes + count, *b = planes + 2 * count;
    for (size_t i = 0; i < count; i++) {
        const uint8_t *p = pixels + i * (size_t)channels;
        if (channels < 3) {
            r[i] = g[i] = b[i] = p[0];
        } else {
            r[i] = p[0], g[i] = p[1], b[i] = p[2];
        }
    }
    int size = transparent ? 255 : 256;
    if (GifQuantizeBuffer(width, height, &size, r, g, b, indices, map) == GIF_ERROR) return IW_FAILED;
    *colors = size;
    /* Two rounds of refinement (k-means steps): each entry the mean of its pixels, then each pixel
     * the nearest entry (looked up once per cell of 6 bits a channel). */
    uint16_t *nearest = malloc(sizeof(uint16_t) << 18);
    if (!nearest) return IW_FAILED;
    for (int round = 0; round < 2; round++) {
        uint64_t sums[256][4];
        memset(sums, 0, sizeof sums);
        for (size_t i = 0; i < count; i++) {
            uint64_t *sum = sums[indices[i]];
            sum[0] += r[i], sum[1] += g[i], sum[2] += b[i], sum[3]++;
        }
        for (int c = 0; c < size; c++)
            if (sums[c][3])
                map[c] = (GifColorType){(GifByteType)((sums[c][0] + sums[c][3] / 2) / sums[c][3]),
                                        (GifByteType)((sums[c][1] + sums[c][3] / 2) / sums[c][3]),
                                        (GifByteType)((sums[c][2] + sums[c][3] / 2) / sums[c][3])};
        memset(nearest, 0xFF, sizeof(uint16_t) << 18);
        for (size_t i = 0; i < count; i++) {
            uint32_t cell = (uint32_t)(r[i] >> 2) << 12 | (uint32_t)(g[i] >> 2) << 6 | (b[i] >> 2);
            if (nearest[cell] == 0xFFFF) {
                /* The cell's centre against every entry. */
                int cr = (r[i] & 0xFC) + 2, cg = (g[i] & 0xFC) + 2, cb = (b[i] & 0xFC) + 2, best = 0;
                long best_distance = -1;
                for (int c = 0; c < size; c++) {
                    long dr = cr - map[c].Red, dg = cg - map[c].Green, db = cb - map[c].Blue;
                    long distance = dr * dr * 2 + dg * dg * 4 + db * db * 3;
                    if (best_distance < 0 || distance < best_distance) best_distance = distance, best = c;
                }
                nearest[cell] = (uint16_t)best;
            }
            indices[i] = (uint8_t)nearest[cell];
        }
    }
    free(nearest);
    if (transparent)
        for (size_t i = 0; i < count; i++)
            if (pixels[i * 4 + 3] < 128) indices[i] = 255;
    return 0;
}

static int any_transparent(const uint8_t *pixels, int channels, size_t count) {
    if (channels != 4) return 0;
    for (size_t i = 0; i < count; i++)
        if (pixels[i * 4 + 3] < 128) return 1;
    return 0;
}

int iw_gif_encode(const uint8_t *const *frames, uint32_t count, const uint32_t *delays_ms, uint32_t width, uint32_t height,
                  int channels, int32_t loop_count, uint8_t **bytes, size_t *length, char error[256]) {
    *bytes = NULL;
    *length = 0;
    error[0] = 0;
    if (count == 0) return snprintf(error, 256, "no frame to encode"), IW_FAILED;
    if (width == 0 || height == 0 || width > 65535 || height > 65535)
        return snprintf(error, 256, "GIF holds at most 65535x65535 pixels, not %ux%u", width, height), IW_FAILED;
    size_t pixels = (size_t)width * height;
    uint8_t *indices = malloc(pixels), *planes = malloc(pixels * 3);
    ColorMapObject *map = GifMakeMapObject(256, NULL);
    sink out = {0};
    int gif_error = 0, status = 0;
    GifFileType *gif = indices && planes && map ? EGifOpen(&out, write_bytes, &gif_error) : NULL;
    if (!gif) {
        snprintf(error, 256, "out of memory");
        status = IW_FAILED;
    }
    /* Any transparency in the animation: every frame is cleared before the next (disposal 2). */
    int cleared = 0;
    for (uint32_t i = 0; i < count && !cleared; i++) cleared = any_transparent(frames[i], channels, pixels);
    if (status == 0) {
        EGifSetGifVersion(gif, true);
        if (EGifPutScreenDesc(gif, (int)width, (int)height, 8, 0, NULL) == GIF_ERROR) status = IW_FAILED;
    }
    if (status == 0 && count > 1 && loop_count >= 0) {
        uint8_t loops[3] = {1, (uint8_t)(loop_count & 0xFF), (uint8_t)((loop_count >> 8) & 0xFF)};
        if (EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE) == GIF_ERROR ||
            EGifPutExtensionBlock(gif, 11, "NETSCAPE2.0") == GIF_ERROR || EGifPutExtensionBlock(gif, 3, loops) == GIF_ERROR ||
            EGifPutExtensionTrailer(gif) == GIF_ERROR)
            status = IW_FAILED;
    }
    for (uint32_t i = 0; i < count && status == 0; i++) {
        int transparent = any_transparent(frames[i], channels, pixels);
        int colors = 256;
        if (quantize(frames[i], channels, width, height, transparent, indices, map->Colors, &colors, planes) != 0) {
            snprintf(error, 256, "GIF quantization failed");
            status = IW_FAILED;
            break;
        }
        uint32_t hundredths = (delays_ms[i] + 5) / 10;
        GraphicsControlBlock control = {cleared ? DISPOSE_BACKGROUND : DISPOSE_DO_NOT, false,
                                        (int)(hundredths > 65535 ? 65535 : hundredths), transparent ? 255 : NO_TRANSPARENT_COLOR};
        GifByteType extension[4];
        size_t written = EGifGCBToExtension(&control, extension);
        /* (A palette of 256 entries: unused ones black; 255 the transparent one.) */
        for (int c = colors; c < 256; c++) map->Colors[c] = (GifColorType){0, 0, 0};
        if ((count > 1 || transparent) && EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, (int)written, extension) == GIF_ERROR) {
            status = IW_FAILED;
            break;
        }
        if (EGifPutImageDesc(gif, 0, 0, (int)width, (int)height, false, map) == GIF_ERROR) {
            status = IW_FAILED;
            break;
        }
        for (uint32_t y = 0; y < height && status == 0; y++)
            if (EGifPutLine(gif, indices + (size_t)y * width, (int)width) == GIF_ERROR) status = IW_FAILED;
    }
    if (gif) {
        int close_error = 0;
        if (EGifCloseFile(gif, &close_error) == GIF_ERROR && status == 0) status = IW_FAILED, gif_error = close_error;
        else if (status != 0) gif_error = gif->Error;
    }
    if (status == 0 && out.failed) status = IW_FAILED;
    if (status != 0 && !error[0])
        snprintf(error, 256, "GIF encoding failed: %s", out.failed ? "out of memory" : GifErrorString(gif_error) ? GifErrorString(gif_error) : "error");
    free(indices);
    free(planes);
    GifFreeMapObject(map);
    if (status != 0) {
        free(out.bytes);
        return IW_FAILED;
    }
    *bytes = out.bytes;
    *length = out.length;
    return 0;
}
