/* GIF's LZW decoding, for every frame of an animation (iw_gif_frames.c): each code's string is a
 * run already written to the output (where the code was last emitted, and its length), so a code
 * is decoded by one copy instead of a walk down its prefix chain, as giflib's DGifGetLine does
 * pixel by pixel. Several times faster on photographic frames; the same indices (the tests hold
 * every frame of the corpus to giflib's first frames, to gif2webp and to Pillow). */
#include "iw_gif_reader.h"
#include <string.h>

size_t iw_gif_lzw_decode(int min_code_size, const uint8_t *data, size_t length, uint8_t *out, size_t count, size_t capacity,
                         int *corrupt) {
    *corrupt = 0;
    /* Room for 16-byte moves past the frame's last index. */
    const int slack = capacity >= count + 16;
    if (min_code_size < 1 || min_code_size > 11) {
        *corrupt = 1;
        return 0;
    }
    /* Each code's string: where it starts in `out` and how long it is (roots: their own value).
     * An entry is written before any code can name it. */
    size_t offset[4096];
    uint16_t run[4096];
    const uint32_t clear = 1u << min_code_size, end = clear + 1;
    uint32_t width = (uint32_t)min_code_size + 1, next = clear + 2, mask = (1u << width) - 1;
    uint64_t bits = 0;
    uint32_t held = 0;
    size_t at = 0, pos = 0, previous_pos = 0;
    int32_t previous = -1;
    while (pos < count) {
        while (held < width) {
            if (at >= length) return pos; /* the data ends before the frame does */
            bits |= (uint64_t)data[at++] << held;
            held += 8;
        }
        uint32_t code = (uint32_t)bits & mask;
        bits >>= width;
        held -= width;
        if (code == clear) {
            width = (uint32_t)min_code_size + 1, mask = (1u << width) - 1, next = clear + 2, previous = -1;
            continue;
        }
        if (code == end) return pos;
        size_t left = count - pos;
        if (previous < 0) {
            if (code >= clear) {
                *corrupt = 1;
                return pos;
            }
            out[pos] = (uint8_t)code;
            previous = (int32_t)code, previous_pos = pos;
            pos += 1;
            /* (As giflib counts it: with a minimum code size of 1, the width grows already.) */
            if (next == mask + 1 && width < 12) width++, mask = (1u << width) - 1;
            continue;
        }
        uint32_t previous_run = (uint32_t)previous < clear ? 1 : run[previous];
        size_t start = pos;
        if (code < clear) {
            out[pos++] = (uint8_t)code;
        } else if (code < next) {
            size_t n = run[code] < left ? run[code] : left;
            if (n <= 16 && slack) {
                /* Short runs (most, in photographs) as one 16-byte move: loaded whole before it is
                 * stored, so the bytes past the run may be anything (later codes write them). */
                uint64_t a, b;
                memcpy(&a, out + offset[code], 8);
                memcpy(&b, out + offset[code] + 8, 8);
                memcpy(out + pos, &a, 8);
                memcpy(out + pos + 8, &b, 8);
            } else {
                memcpy(out + pos, out + offset[code], n);
            }
            pos += n;
        } else if (code == next) {
            /* The string not yet in the table: the previous one and its own first index. */
            size_t n = previous_run < left ? previous_run : left;
            memcpy(out + pos, out + previous_pos, n);
            pos += n;
            if (pos < count) out[pos++] = out[previous_pos];
        } else {
            *corrupt = 1;
            return pos;
        }
        if (next < 4096) {
            /* The previous string and this one's first index: where the previous was written. */
            offset[next] = previous_pos;
            run[next] = (uint16_t)(previous_run + 1);
            next++;
            if (next == mask + 1 && width < 12) width++, mask = (1u << width) - 1;
        }
        previous = (int32_t)code, previous_pos = start;
    }
    return pos;
}
