/* What the GIF files share inside CImageCodecs (not a public header): giflib reading from memory. */
#ifndef IW_GIF_READER_H
#define IW_GIF_READER_H
#include <gif_lib.h>
#include <stddef.h>
#include <stdint.h>

/* A whole buffer giflib reads from (DGifOpen's user data): `at` is how far it has read. */
typedef struct {
    const uint8_t *data;
    size_t length, at;
} iw_gif_reader;

/* giflib's InputFunc over an iw_gif_reader: as many bytes as are left, up to `count`. */
int iw_gif_read_bytes(GifFileType *gif, GifByteType *into, int count);

/* The row of a frame of `height` rows that the n-th line of an interlaced image goes to, and its
 * pass (0-3; 4 and `height` past the end). */
uint32_t iw_gif_interlaced_row(uint32_t line, uint32_t height, uint32_t *pass);

/* A frame's LZW data (its sub-blocks joined, `length` bytes) decoded into `count` palette indices in
 * file order (iw_gif_lzw.c; `out` holds `count` + 16 bytes: its short copies move 16 at a time):
 * how many it held (fewer when the data ends first); `corrupt` set when a code is not one the table
 * can hold, or the minimum code size is not 1-11. */
size_t iw_gif_lzw_decode(int min_code_size, const uint8_t *data, size_t length, uint8_t *out, size_t count, int *corrupt);

#endif
