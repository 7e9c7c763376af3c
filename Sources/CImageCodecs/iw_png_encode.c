/* PNG encoding of 8-bit pixels for delivery (`format: png`).
 *
 * The worker encodes every PNG it delivers with `fast`: an image whose filtered rows fit
 * IW_PNG_WHOLE_BUFFER_MAX goes through libdeflate at level 1 in one call (PNG chunks written here);
 * larger ones through libpng's full write API with zlib level 1 and the Up filter on every
 * row: on a 12 MP photo 0.7–0.8 s and 17.7 MB, where the simplified API's PNG_IMAGE_FLAG_FAST
 * (level 3, no filter) takes 1.3–1.9 s for 25.5 MB. Without `fast`: libpng's defaults (adaptive
 * filters, level 6) through the simplified API, for callers who want the smallest file. libpng's
 * errors longjmp back to this file's frame only. */
#include "iw_whole.h"
#include "iw_png_failure.h"
#include <libdeflate.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Filtered rows up to this size (about 2 megapixels of RGBA) are compressed in one call. */
#define IW_PNG_WHOLE_BUFFER_MAX ((size_t)8 << 20)

/* Where the PNG grows. */
struct png_sink {
    uint8_t *data;
    size_t length, capacity;
};

static void sink_write(png_structp png, png_bytep data, size_t length) {
    struct png_sink *sink = png_get_io_ptr(png);
    if (length > sink->capacity - sink->length) {
        size_t capacity = sink->capacity ? sink->capacity : 65536;
        while (length > capacity - sink->length) {
            if (capacity > SIZE_MAX / 2) png_error(png, "the PNG is too large");
            capacity *= 2;
        }
        uint8_t *grown = realloc(sink->data, capacity);
        if (!grown) png_error(png, "out of memory for the PNG");
        sink->data = grown;
        sink->capacity = capacity;
    }
    memcpy(sink->data + sink->length, data, length);
    sink->length += length;
}

static void sink_flush(png_structp png) { (void)png; }

/* The PNG colour type of 8-bit pixels with 1, 3 or 4 channels. */
static int color_type(int channels) {
    return channels == 4 ? PNG_COLOR_TYPE_RGB_ALPHA : channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY;
}

static int encode_fast(const uint8_t *pixels, uint32_t width, uint32_t height, int channels, size_t stride,
                       uint8_t **bytes, size_t *length, char error[256]) {
    struct png_sink sink;
    struct iw_png_failure failure;
    memset(&sink, 0, sizeof sink);
    memset(&failure, 0, sizeof failure);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &failure, iw_png_on_error, iw_png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(&png, NULL);
        snprintf(error, 256, "out of memory for the PNG encoder");
        return IW_FAILED;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(sink.data);
        snprintf(error, 256, "%s", failure.text[0] ? failure.text : "PNG encoding failed");
        return IW_FAILED;
    }
    /* About what a photo compresses to, so that the buffer rarely grows. */
    sink.capacity = (size_t)width * height * (size_t)channels / 2 + 65536;
    sink.data = malloc(sink.capacity);
    if (!sink.data) png_error(png, "out of memory for the PNG");
    png_set_write_fn(png, &sink, sink_write, sink_flush);
    const int type = color_type(channels);
    png_set_IHDR(png, info, width, height, 8, type, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_UP);
    png_set_compression_level(png, 1);
    png_set_compression_strategy(png, Z_DEFAULT_STRATEGY);
    png_write_info(png, info);
    for (uint32_t y = 0; y < height; y++) png_write_row(png, pixels + (size_t)y * stride);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    uint8_t *shrunk = realloc(sink.data, sink.length ? sink.length : 1);
    *bytes = shrunk ? shrunk : sink.data;
    *length = sink.length;
    return 0;
}

static int encode_simplified(const uint8_t *pixels, uint32_t width, uint32_t height, int channels, size_t stride,
                             uint8_t **bytes, size_t *length, char error[256]) {
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
        snprintf(error, 256, "out of memory for the PNG");
        return IW_FAILED;
    }
    if (!png_image_write_to_memory(&image, buffer, &size, 0, pixels, (png_int_32)stride, NULL)) {
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

/* The same image as encode_fast (Up filter on every row, one zlib stream), compressed by
 * libdeflate in one call: several times faster than zlib's level 1, and smaller. Needs the
 * filtered rows and the output in memory, so only for images up to IW_PNG_WHOLE_BUFFER_MAX. */
static int encode_whole(const uint8_t *pixels, uint32_t width, uint32_t height, int channels, size_t stride,
                        uint8_t **bytes, size_t *length, char error[256]) {
    const size_t row = (size_t)width * channels, filtered_size = (row + 1) * height;
    uint8_t *filtered = malloc(filtered_size);
    struct libdeflate_compressor *compressor = libdeflate_alloc_compressor(1);
    const size_t bound = compressor ? libdeflate_zlib_compress_bound(compressor, filtered_size) : 0;
    uint8_t *out = compressor ? malloc(8 + 25 + 12 + bound + 12) : NULL;
    if (!filtered || !compressor || !out) {
        free(filtered);
        free(out);
        if (compressor) libdeflate_free_compressor(compressor);
        snprintf(error, 256, "out of memory for the PNG");
        return IW_FAILED;
    }
    for (uint32_t y = 0; y < height; y++) {
        uint8_t *f = filtered + (size_t)y * (row + 1);
        const uint8_t *cur = pixels + (size_t)y * stride;
        f[0] = 2; /* Up */
        if (y == 0) {
            memcpy(f + 1, cur, row);
        } else {
            const uint8_t *up = cur - stride;
            for (size_t x = 0; x < row; x++) f[1 + x] = (uint8_t)(cur[x] - up[x]);
        }
    }
    static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    uint8_t *p = out;
    memcpy(p, signature, 8);
    p += 8;
    put32(p + 8, width);
    put32(p + 12, height);
    p[16] = 8;                                                  /* bit depth */
    p[17] = (uint8_t)color_type(channels);
    p[18] = p[19] = p[20] = 0;                                  /* deflate, adaptive filters, no interlace */
    p += finish_chunk(p, "IHDR", 13);
    const size_t compressed = libdeflate_zlib_compress(compressor, filtered, filtered_size, p + 8, bound);
    libdeflate_free_compressor(compressor);
    free(filtered);
    if (compressed == 0 || compressed > 0x7FFFFFFF) {
        free(out);
        snprintf(error, 256, "PNG compression failed");
        return IW_FAILED;
    }
    p += finish_chunk(p, "IDAT", compressed);
    p += finish_chunk(p, "IEND", 0);
    *length = (size_t)(p - out);
    uint8_t *shrunk = realloc(out, *length);
    *bytes = shrunk ? shrunk : out;
    return 0;
}

int iw_png_encode(const uint8_t *pixels, uint32_t width, uint32_t height, int channels, size_t stride, int fast,
                  uint8_t **bytes, size_t *length, char error[256]) {
    if (fast && ((size_t)width * channels + 1) * height <= IW_PNG_WHOLE_BUFFER_MAX)
        return encode_whole(pixels, width, height, channels, stride, bytes, length, error);
    if (fast) return encode_fast(pixels, width, height, channels, stride, bytes, length, error);
    return encode_simplified(pixels, width, height, channels, stride, bytes, length, error);
}
