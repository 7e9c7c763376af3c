/* GIF's LZW decoding, for every frame of an animation (iw_gif_frames.c): each code's string is a
 * run already written to the output (where the code was last emitted, and its length), so a code
 * is decoded by one copy instead of a walk down its prefix chain, as giflib's DGifGetLine does
 * pixel by pixel. Several times faster on photographic frames; the same indices (the tests hold
 * every frame of the corpus to giflib's first frames, to gif2webp and to Pillow). */
#include "iw_gif_reader.h"
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define IW_LE64(word) __builtin_bswap64(word)
#else
#define IW_LE64(word) (word)
#endif

/* A table entry: where the code's string starts in the output (high bits) and its length (low 16). */
#define IW_ENTRY(start, length) (((uint64_t)(start) << 16) | (uint64_t)(length))

size_t iw_gif_lzw_decode(int min_code_size, const uint8_t *data, size_t length, uint8_t *out, size_t count, int *corrupt) {
    *corrupt = 0;
    if (min_code_size < 1 || min_code_size > 11) {
        *corrupt = 1;
        return 0;
    }
    /* Each code's string (roots: their own value, length 1). An entry is written before any code
     * can name it. */
    uint64_t table[4096];
    const uint32_t clear = 1u << min_code_size, end = clear + 1;
    uint32_t width = (uint32_t)min_code_size + 1, next = clear + 2, mask = (1u << width) - 1;
    uint64_t bits = 0;
    uint32_t held = 0;
    size_t at = 0;
    uint8_t *p = out;
    uint8_t *const stop = out + count;
    /* The previous code's string: where it was written and how long it is (0: none since a clear). */
    uint8_t *previous = out;
    size_t previous_length = 0;
    while (p < stop) {
        if (held < width) {
            if (length - at >= 8) {
                /* Eight bytes at once, as many whole ones taken as fit: the bits above `held` are
                 * the stream's next ones, and a later load puts the same bits in the same place. */
                uint64_t word;
                memcpy(&word, data + at, 8);
                bits |= IW_LE64(word) << held;
                at += (63 - held) >> 3;
                held |= 56;
            } else {
                do {
                    if (at >= length) return (size_t)(p - out); /* the data ends before the frame does */
                    bits |= (uint64_t)data[at++] << held;
                    held += 8;
                } while (held < width);
            }
        }
        const uint32_t code = (uint32_t)bits & mask;
        bits >>= width;
        held -= width;
        uint8_t *const start = p;
        if (code < clear) {
            *p++ = (uint8_t)code;
        } else if (code > end && code < next) {
            const uint64_t entry = table[code];
            const uint8_t *from = out + (entry >> 16);
            size_t n = entry & 0xFFFF;
            if (n <= 16) {
                /* Short runs (most, in photographs) as one 16-byte move: loaded whole before it is
                 * stored, so the bytes past the run may be anything (later codes write them); `out`
                 * has 16 bytes past the frame for it. */
                uint64_t a, b;
                memcpy(&a, from, 8);
                memcpy(&b, from + 8, 8);
                memcpy(p, &a, 8);
                memcpy(p + 8, &b, 8);
            } else {
                if (n > (size_t)(stop - p)) n = (size_t)(stop - p);
                memcpy(p, from, n);
            }
            p += n;
        } else if (code == clear) {
            width = (uint32_t)min_code_size + 1, mask = (1u << width) - 1, next = clear + 2, previous_length = 0;
            continue;
        } else if (code == end) {
            break;
        } else if (code == next && previous_length > 0) {
            /* The string not yet in the table: the previous one and its own first index. */
            size_t n = previous_length < (size_t)(stop - p) ? previous_length : (size_t)(stop - p);
            memcpy(p, previous, n); /* (it ends where this one starts) */
            p += n;
            if (p < stop) *p++ = *previous;
        } else {
            *corrupt = 1;
            break;
        }
        if (previous_length > 0 && next < 4096) {
            /* The previous string and this one's first index: where the previous was written. */
            table[next] = IW_ENTRY(previous - out, previous_length + 1);
            next++;
            if (next == mask + 1 && width < 12) width++, mask = (1u << width) - 1;
        } else if (previous_length == 0 && next == mask + 1 && width < 12) {
            /* (As giflib counts it: with a minimum code size of 1, the width grows already.) */
            width++, mask = (1u << width) - 1;
        }
        previous = start;
        previous_length = (size_t)(p - start);
    }
    if (p > stop) p = stop; /* (a short run's move may pass the frame's end: those are not indices) */
    return (size_t)(p - out);
}
