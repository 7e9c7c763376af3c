#ifndef IW_DEFLATE_H
#define IW_DEFLATE_H
#include <stddef.h>
#include <stdint.h>

/* A zlib stream built block by block in a growing buffer (iw_deflate.c): Huffman coding with runs of
 * the previous byte as the only matches, the compression fast PNG encoding uses. */
struct iw_deflate {
    uint8_t *data;       /* the stream so far (malloc'd; the caller frees it with iw_deflate_free) */
    size_t length, capacity;
    uint64_t bits;       /* bits not yet written, and how many */
    int bit_count;
    int previous;        /* the last byte compressed, -1 before the first */
    uint32_t adler;
    int failed;          /* out of memory */
};

/* Starts a stream after `prefix` zeroed bytes (for the caller's own header), with room for about
 * `capacity_hint` bytes more. 0, or -1 when out of memory. */
int iw_deflate_begin(struct iw_deflate *z, size_t prefix, size_t capacity_hint);
/* Compresses `length` bytes as one block (or stored blocks if they would not shrink); `final` for
 * the last. 0, or -1 when out of memory. */
int iw_deflate_block(struct iw_deflate *z, const uint8_t *data, size_t length, int final);
/* Writes the checksum after the final block. 0, or -1 when out of memory. */
int iw_deflate_end(struct iw_deflate *z);
void iw_deflate_free(struct iw_deflate *z);

#endif
