/* PNG and WebP colour information from the bytes (iw_color_tags.h). */
#include "iw_color_tags.h"
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* An iCCP chunk's profile: a name of 1-79 bytes, a 0, compression method 0, then zlib data. */
static void inflate_profile(const uint8_t *payload, size_t size, iw_color_tags *tags) {
    const uint8_t *end = memchr(payload, 0, size < 80 ? size : 80);
    if (!end || end == payload || (size_t)(end - payload) + 2 > size || end[1] != 0) return;
    const uint8_t *zlib = end + 2;
    size_t zlib_size = size - (size_t)(zlib - payload);
    struct libdeflate_decompressor *decompressor = libdeflate_alloc_decompressor();
    if (!decompressor) return;
    /* Profiles are rarely over a few hundred KiB: the buffer grows until the data fits. */
    for (size_t capacity = 64 * 1024; capacity <= 32 * 1024 * 1024; capacity *= 4) {
        uint8_t *buffer = malloc(capacity);
        if (!buffer) break;
        size_t actual = 0;
        enum libdeflate_result result = libdeflate_zlib_decompress(decompressor, zlib, zlib_size, buffer, capacity, &actual);
        if (result == LIBDEFLATE_SUCCESS) {
            tags->icc = buffer;
            tags->icc_length = actual;
            break;
        }
        free(buffer);
        if (result != LIBDEFLATE_INSUFFICIENT_SPACE) break;
    }
    libdeflate_free_decompressor(decompressor);
}

int iw_png_scan_color(const uint8_t *data, size_t length, iw_color_tags *tags) {
    static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    memset(tags, 0, sizeof *tags);
    if (length < 8 || memcmp(data, signature, 8) != 0) return 1;
    size_t at = 8;
    while (length - at >= 8) {
        uint32_t size = be32(data + at);
        const uint8_t *type = data + at + 4;
        if (memcmp(type, "IDAT", 4) == 0 || memcmp(type, "IEND", 4) == 0) return 1;
        if (length - at < 12 || size > length - at - 12) return 0; /* the chunk has not all arrived */
        const uint8_t *payload = data + at + 8;
        if (libdeflate_crc32(0, type, (size_t)size + 4) == be32(payload + size)) {
            if (memcmp(type, "iCCP", 4) == 0 && !tags->icc) {
                inflate_profile(payload, size, tags);
            } else if (memcmp(type, "sRGB", 4) == 0 && size == 1) {
                tags->srgb = 1;
            } else if (memcmp(type, "cICP", 4) == 0 && size == 4) {
                tags->has_cicp = 1;
                tags->cicp_primaries = payload[0];
                tags->cicp_transfer = payload[1];
            } else if (memcmp(type, "gAMA", 4) == 0 && size == 4) {
                tags->has_gama = 1;
            } else if (memcmp(type, "cHRM", 4) == 0 && size == 32) {
                /* White, red, green, blue; stored as red, green, blue, white. */
                for (int i = 0; i < 8; i++) tags->xy[(i + 6) % 8] = be32(payload + 4 * i) / 100000.0;
                tags->has_chrm = 1;
            }
        }
        at += (size_t)size + 12;
    }
    return 0;
}

int iw_webp_scan_color(const uint8_t *data, size_t length, iw_color_tags *tags) {
    memset(tags, 0, sizeof *tags);
    if (length < 12 || memcmp(data, "RIFF", 4) != 0 || memcmp(data + 8, "WEBP", 4) != 0) return 1;
    size_t end = (size_t)le32(data + 4) + 8;
    if (end > length) end = length;
    size_t at = 12;
    while (end - at >= 8) {
        uint32_t size = le32(data + at + 4);
        const uint8_t *type = data + at;
        if (memcmp(type, "VP8 ", 4) == 0 || memcmp(type, "VP8L", 4) == 0 || memcmp(type, "ANMF", 4) == 0 || memcmp(type, "ALPH", 4) == 0)
            return 1;
        if (size > end - at - 8) return 0;
        if (memcmp(type, "ICCP", 4) == 0 && !tags->icc && size > 0) {
            tags->icc = malloc(size);
            if (tags->icc) {
                memcpy(tags->icc, data + at + 8, size);
                tags->icc_length = size;
            }
        }
        at += 8 + (size_t)size + (size & 1);
    }
    return 0;
}

void iw_color_tags_free(iw_color_tags *tags) {
    free(tags->icc);
    tags->icc = NULL;
    tags->icc_length = 0;
}

int iw_png_iccp_chunk(const uint8_t *icc, size_t length, uint8_t **chunk, size_t *chunk_length) {
    *chunk = NULL;
    *chunk_length = 0;
    static const char name[] = "ICC Profile";
    struct libdeflate_compressor *compressor = libdeflate_alloc_compressor(9);
    if (!compressor) return -1;
    size_t bound = libdeflate_zlib_compress_bound(compressor, length);
    size_t header = 8 + sizeof name + 1; /* length, type, name and its 0, method */
    uint8_t *out = malloc(header + bound + 4);
    if (!out) {
        libdeflate_free_compressor(compressor);
        return -1;
    }
    memcpy(out + 4, "iCCP", 4);
    memcpy(out + 8, name, sizeof name);
    out[8 + sizeof name] = 0;
    size_t compressed = libdeflate_zlib_compress(compressor, icc, length, out + header, bound);
    libdeflate_free_compressor(compressor);
    size_t data = sizeof name + 1 + compressed;
    if (compressed == 0 || data > 0x7FFFFFFF) {
        free(out);
        return -1;
    }
    out[0] = (uint8_t)(data >> 24);
    out[1] = (uint8_t)(data >> 16);
    out[2] = (uint8_t)(data >> 8);
    out[3] = (uint8_t)data;
    uint32_t crc = libdeflate_crc32(0, out + 4, data + 4);
    uint8_t *end = out + 8 + data;
    end[0] = (uint8_t)(crc >> 24);
    end[1] = (uint8_t)(crc >> 16);
    end[2] = (uint8_t)(crc >> 8);
    end[3] = (uint8_t)crc;
    *chunk = out;
    *chunk_length = 12 + data;
    return 0;
}
