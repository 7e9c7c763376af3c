/* PNG encoding of 8-bit pixels for delivery (`format: png`).
 *
 * Four channels whose alpha is 255 in every pixel (a JPEG decoded to RGBA, an opaque PNG) are
 * written as RGB: the same pixels for every reader, a quarter fewer bytes to filter, compress and
 * store, and what Pillow writes for such images.
 *
 * The worker encodes every PNG it delivers with `fast`: the Up filter on every row and iw_deflate's
 * Huffman-and-runs compression, rows filtered and compressed a block at a time, chunks written here.
 * Without `fast`: libpng's defaults (adaptive filters, level 6) through the simplified API, for
 * callers who want the smallest file (the simplified API catches libpng's errors itself: nothing
 * longjmps here). */
#include "iw_whole.h"
#include "iw_deflate.h"
#include "iw_pixels.h"
#include <libdeflate.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Filtered rows compressed per deflate block: enough for a block's code tables to pay for themselves,
 * small enough to stay in cache between filtering and the two compression passes. */
#define IW_PNG_BLOCK_BYTES ((size_t)256 << 10)

/* The PNG colour type of 8-bit pixels with 1, 3 or 4 channels. */
static int color_type(int channels) {
    return channels == 4 ? PNG_COLOR_TYPE_RGB_ALPHA : channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY;
}

/* Whether every pixel of 4-channel rows has alpha 255. */
static int opaque(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride) {
    for (uint32_t y = 0; y < height; y++) {
        const uint8_t *row = pixels + (size_t)y * stride;
        uint8_t all = 255;
        for (uint32_t x = 0; x < width; x++) all &= row[(size_t)x * 4 + 3];
        if (all != 255) return 0;
    }
    return 1;
}

/* Row `y` in the PNG's channels: the pixels themselves, or (RGBA to RGB) converted into `scratch`. */
static const uint8_t *png_row(const uint8_t *pixels, size_t stride, uint32_t y, uint32_t width, int from, int to, uint8_t *scratch) {
    const uint8_t *row = pixels + (size_t)y * stride;
    if (from == to) return row;
    iw_convert_pixels(row, from, scratch, to, width);
    return scratch;
}

static int encode_simplified(const uint8_t *pixels, uint32_t width, uint32_t height, int channels, size_t stride,
                             uint8_t **bytes, size_t *length, char error[256]) {
    uint8_t *compact = NULL;
    if (channels == 4 && opaque(pixels, width, height, stride)) {
        compact = malloc((size_t)width * height * 3 + 1);
        if (!compact) {
            snprintf(error, 256, "out of memory for the PNG");
            return IW_FAILED;
        }
        for (uint32_t y = 0; y < height; y++) png_row(pixels, stride, y, width, 4, 3, compact + (size_t)y * width * 3);
        pixels = compact, channels = 3, stride = (size_t)width * 3;
    }
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = width;
    image.height = height;
    image.format = channels == 4 ? PNG_FORMAT_RGBA : channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    /* One compression pass into a buffer of libpng's upper bound, then shrunk: asking libpng for
     * the size first (a NULL buffer) compresses the whole image once more, which doubled the cost
     * (5 s per pass for a 12 MP RGBA photo). The bound's pages the PNG does not reach are never
     * touched. */
    png_alloc_size_t capacity = PNG_IMAGE_PNG_SIZE_MAX(image), size = capacity;
    uint8_t *buffer = malloc(capacity ? capacity : 1);
    if (!buffer) {
        free(compact);
        snprintf(error, 256, "out of memory for the PNG");
        return IW_FAILED;
    }
    const int written = png_image_write_to_memory(&image, buffer, &size, 0, pixels, (png_int_32)stride, NULL);
    free(compact);
    if (!written) {
        snprintf(error, 256, "%s", size > capacity ? "the PNG is larger than libpng's own bound" : image.message);
        free(buffer);
        return IW_FAILED;
    }
    uint8_t *shrunk = realloc(buffer, size ? size : 1);
    if (shrunk) buffer = shrunk;
    *bytes = buffer;
    *length = size;
    return 0;
}

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* A chunk at `p` whose data (`length` bytes) is already at p + 8: its length, type and CRC. */
static size_t finish_chunk(uint8_t *p, const char type[4], size_t length) {
    put32(p, (uint32_t)length);
    memcpy(p + 4, type, 4);
    put32(p + 8 + length, libdeflate_crc32(0, p + 4, length + 4));
    return length + 12;
}

/* The PNG is built in the zlib stream's own buffer: iw_deflate_begin leaves room in front for the
 * signature, IHDR and the IDAT chunk's header (its length filled in at the end); the compressed rows
 * follow, then the chunk's CRC and IEND. */
static int encode_fast(const uint8_t *pixels, uint32_t width, uint32_t height, int from, size_t stride,
                       uint8_t **bytes, size_t *length, char error[256]) {
    const int channels = from == 4 && opaque(pixels, width, height, stride) ? 3 : from;
    const size_t row = (size_t)width * channels, filtered_row = row + 1;
    const size_t rows_per_block = filtered_row >= IW_PNG_BLOCK_BYTES ? 1 : IW_PNG_BLOCK_BYTES / filtered_row;
    const size_t idat = 8 + 25; /* signature, IHDR */
    uint8_t *filtered = malloc(filtered_row * (rows_per_block < height ? rows_per_block : height));
    /* Two compacted rows (this one and the one above) when alpha is dropped. */
    uint8_t *compact = channels != from ? malloc(row * 2) : NULL;
    struct iw_deflate z;
    /* About what a photo compresses to, so that the buffer rarely grows. */
    if (!filtered || (channels != from && !compact) || iw_deflate_begin(&z, idat + 8, row * height / 2 + 1024) != 0) {
        free(filtered);
        free(compact);
        snprintf(error, 256, "out of memory for the PNG");
        return IW_FAILED;
    }
    static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    uint8_t *p = z.data;
    memcpy(p, signature, 8);
    put32(p + 16, width);
    put32(p + 20, height);
    p[24] = 8;                                                  /* bit depth */
    p[25] = (uint8_t)color_type(channels);
    p[26] = p[27] = p[28] = 0;                                  /* deflate, adaptive filters, no interlace */
    finish_chunk(p + 8, "IHDR", 13);
    int failed = 0;
    for (uint32_t y0 = 0; y0 < height && !failed; y0 += (uint32_t)rows_per_block) {
        const uint32_t rows = height - y0 < rows_per_block ? height - y0 : (uint32_t)rows_per_block;
        for (uint32_t r = 0; r < rows; r++) {
            const uint32_t y = y0 + r;
            uint8_t *f = filtered + (size_t)r * filtered_row;
            const uint8_t *cur = png_row(pixels, stride, y, width, from, channels, compact ? compact + (y % 2) * row : NULL);
            f[0] = 2; /* Up */
            if (y == 0) {
                memcpy(f + 1, cur, row);
            } else {
                const uint8_t *up = compact ? compact + ((y - 1) % 2) * row : cur - stride;
                for (size_t x = 0; x < row; x++) f[1 + x] = (uint8_t)(cur[x] - up[x]);
            }
        }
        failed = iw_deflate_block(&z, filtered, (size_t)rows * filtered_row, y0 + rows == height) != 0;
    }
    free(filtered);
    free(compact);
    /* The IDAT chunk's CRC and the IEND chunk after the stream. */
    uint8_t *png = failed || iw_deflate_end(&z) != 0 ? NULL : realloc(z.data, z.length + 4 + 12);
    if (!png) {
        iw_deflate_free(&z);
        snprintf(error, 256, "out of memory for the PNG");
        return IW_FAILED;
    }
    const size_t data_length = z.length - idat - 8;
    if (data_length > 0x7FFFFFFF) {
        free(png);
        snprintf(error, 256, "the PNG's image data is too large for one chunk");
        return IW_FAILED;
    }
    size_t end = idat + finish_chunk(png + idat, "IDAT", data_length);
    end += finish_chunk(png + end, "IEND", 0);
    *bytes = png;
    *length = end;
    return 0;
}

int iw_png_encode(const uint8_t *pixels, uint32_t width, uint32_t height, int channels, size_t stride, int fast,
                  uint8_t **bytes, size_t *length, char error[256]) {
    if (fast) return encode_fast(pixels, width, height, channels, stride, bytes, length, error);
    return encode_simplified(pixels, width, height, channels, stride, bytes, length, error);
}
