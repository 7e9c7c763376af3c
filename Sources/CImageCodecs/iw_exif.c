/* EXIF orientation from a TIFF block, and where PNG and WebP files keep that block (iw_exif.h).
 * JPEG's APP1 segments are walked in iw_jpeg.c. Every read is bounds-checked: these are the
 * bytes of untrusted files. */
#include "iw_exif.h"
#include <libdeflate.h>
#include <string.h>

static unsigned read16(const uint8_t *p, int little) { return little ? (unsigned)(p[0] | p[1] << 8) : (unsigned)(p[0] << 8 | p[1]); }
static uint32_t read32(const uint8_t *p, int little) {
    return little ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
                  : (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

int iw_exif_orientation(const uint8_t *data, size_t length) {
    if (length >= 6 && memcmp(data, "Exif\0\0", 6) == 0) {
        data += 6;
        length -= 6;
    }
    if (length < 8) return 1;
    int little;
    if (data[0] == 'I' && data[1] == 'I') little = 1;
    else if (data[0] == 'M' && data[1] == 'M') little = 0;
    else return 1;
    uint32_t ifd = read32(data + 4, little);
    if (ifd > length || length - ifd < 2) return 1;
    unsigned entries = read16(data + ifd, little);
    for (unsigned i = 0; i < entries; i++) {
        size_t at = ifd + 2 + (size_t)i * 12;
        if (at + 12 > length) break;
        if (read16(data + at, little) == 0x0112 && read16(data + at + 2, little) == 3) {
            unsigned value = read16(data + at + 8, little);
            return value >= 1 && value <= 8 ? (int)value : 1;
        }
    }
    return 1;
}

/* Walks a PNG's chunks for eXIf; with `stop_at_image`, not past the first IDAT (*reached: 1
 * once the bytes reach its header). */
static int png_scan(const uint8_t *data, size_t length, int stop_at_image, int *reached) {
    static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    if (reached) *reached = 0;
    if (length < 8 || memcmp(data, signature, 8) != 0) return 1;
    size_t at = 8;
    while (length - at >= 8) {
        uint32_t size = read32(data + at, 0);
        const uint8_t *type = data + at + 4;
        if (memcmp(type, "IEND", 4) == 0) return 1;
        if (stop_at_image && memcmp(type, "IDAT", 4) == 0) {
            if (reached) *reached = 1;
            return 1;
        }
        if (length - at < 12 || size > length - at - 12) return 1; /* runs past the bytes */
        /* One whose CRC is wrong is passed over, as libpng passes over a damaged ancillary chunk. */
        if (memcmp(type, "eXIf", 4) == 0 && libdeflate_crc32(0, type, (size_t)size + 4) == read32(data + at + 8 + size, 0))
            return iw_exif_orientation(data + at + 8, size);
        at += (size_t)size + 12;
    }
    return 1;
}

int iw_png_scan_orientation(const uint8_t *data, size_t length) { return png_scan(data, length, 0, NULL); }

int iw_png_scan_orientation_before_image(const uint8_t *data, size_t length, int *reached_image) {
    return png_scan(data, length, 1, reached_image);
}

int iw_webp_scan_orientation(const uint8_t *data, size_t length) {
    if (length < 12 || memcmp(data, "RIFF", 4) != 0 || memcmp(data + 8, "WEBP", 4) != 0) return 1;
    /* The RIFF size bounds the chunks (bytes past it are not the file's). */
    size_t end = (size_t)read32(data + 4, 1) + 8;
    if (end > length) end = length;
    size_t at = 12;
    while (at < end && end - at >= 8) {
        uint32_t size = read32(data + at + 4, 1);
        if (size > end - at - 8) return 1;
        if (memcmp(data + at, "EXIF", 4) == 0) return iw_exif_orientation(data + at + 8, size);
        at += 8 + (size_t)size + (size & 1);
    }
    return 1;
}
