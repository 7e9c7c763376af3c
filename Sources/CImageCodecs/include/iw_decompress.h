#ifndef IW_DECOMPRESS_H
#define IW_DECOMPRESS_H
#include <stddef.h>
#include <stdint.h>

/* Whole-buffer decompression of general-purpose streams whose expanded size is known beforehand
 * (a Parquet page's header gives it): the stream must expand to exactly `out_size` bytes.
 * Each returns 0, or -1 when the stream is damaged, expands to another size, or memory ran out. */

/* A gzip stream of one member or several, or a zlib stream (which some writers give for GZIP),
 * through libdeflate. */
int iw_gunzip(const uint8_t *in, size_t in_size, uint8_t *out, size_t out_size);
/* A Zstandard stream of one frame or several, through libzstd. */
int iw_unzstd(const uint8_t *in, size_t in_size, uint8_t *out, size_t out_size);
/* A Brotli stream, through libbrotlidec (which libjxl loads too). */
int iw_unbrotli(const uint8_t *in, size_t in_size, uint8_t *out, size_t out_size);

#endif
