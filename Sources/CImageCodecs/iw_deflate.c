/* A fast zlib stream writer for PNG rows (iw_deflate.h).
 *
 * Each block of input becomes one dynamic-Huffman deflate block whose only matches are runs of the
 * previous byte (distance 1), as zlib's Z_RLE strategy and fpnge do: filtered photo rows hold almost
 * no longer matches, so a full match finder spends most of its time finding nothing, while flat
 * areas and repeated rows (zeros after the Up filter) become runs. Two passes per block over bytes
 * already in cache: one counts symbols, one writes them with canonical codes. A block that would
 * not shrink is written stored. */
#include "iw_deflate.h"
#include <libdeflate.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { LITLEN_SYMBOLS = 286, DIST_SYMBOLS = 30, CODELEN_SYMBOLS = 19, END_OF_BLOCK = 256 };
enum { MAX_CODE_BITS = 15, MAX_CODELEN_BITS = 7, MIN_RUN = 3, MAX_RUN = 258 };

/* The length symbol, its extra bits and their value for every run length 3...258. */
struct length_code {
    uint16_t symbol;
    uint8_t extra_bits;
    uint8_t extra;
};
static struct length_code length_codes[MAX_RUN + 1];

static void make_length_codes(void) {
    static const uint16_t base[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                      35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
    static const uint8_t extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                      3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    for (int code = 0; code < 29; code++) {
        int last = code == 28 ? 258 : code == 27 ? 257 : base[code] + (1 << extra[code]) - 1;
        for (int length = base[code]; length <= last; length++)
            length_codes[length] = (struct length_code){(uint16_t)(257 + code), extra[code], (uint8_t)(length - base[code])};
    }
    /* 258 has its own symbol (285) with no extra bits, not 284 with extra 31. */
    length_codes[258] = (struct length_code){285, 0, 0};
}

static pthread_once_t length_codes_once = PTHREAD_ONCE_INIT;

static const struct length_code *lengths_table(void) {
    pthread_once(&length_codes_once, make_length_codes);
    return length_codes;
}

/* ---- Huffman code lengths ---------------------------------------------------------------- */

struct symbol_frequency {
    uint32_t key; /* the frequency, then (in place) the code length */
    uint16_t symbol;
};

static int by_frequency(const void *a, const void *b) {
    const struct symbol_frequency *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (int)x->symbol - (int)y->symbol;
}

/* Moffat and Katajainen's in-place minimum-redundancy code: `a` sorted by ascending frequency
 * (n >= 2) ends with each entry's code length. */
static void minimum_redundancy(struct symbol_frequency *a, int n) {
    int root = 0, leaf = 2, next;
    a[0].key += a[1].key;
    for (next = 1; next < n - 1; next++) {
        if (leaf >= n || a[root].key < a[leaf].key) {
            a[next].key = a[root].key;
            a[root++].key = (uint32_t)next;
        } else {
            a[next].key = a[leaf++].key;
        }
        if (leaf >= n || (root < next && a[root].key < a[leaf].key)) {
            a[next].key += a[root].key;
            a[root++].key = (uint32_t)next;
        } else {
            a[next].key += a[leaf++].key;
        }
    }
    a[n - 2].key = 0;
    for (next = n - 3; next >= 0; next--) a[next].key = a[a[next].key].key + 1;
    int available = 1, used = 0, depth = 0;
    root = n - 2;
    next = n - 1;
    while (available > 0) {
        while (root >= 0 && (int)a[root].key == depth) {
            used++;
            root--;
        }
        while (available > used) {
            a[next--].key = (uint32_t)depth;
            available--;
        }
        available = 2 * used;
        depth++;
        used = 0;
    }
}

/* Code lengths no longer than `limit` for `count` symbols; every code is complete (at least two
 * symbols get a length: an unused one is given frequency 1 if needed, which costs nothing). */
static void code_lengths(uint32_t *frequency, int count, int limit, uint8_t *lengths) {
    struct symbol_frequency sorted[LITLEN_SYMBOLS];
    int used = 0;
    for (int s = 0; s < count; s++)
        if (frequency[s]) used++;
    for (int s = 0; s < count && used < 2; s++)
        if (!frequency[s]) {
            frequency[s] = 1;
            used++;
        }
    used = 0;
    for (int s = 0; s < count; s++)
        if (frequency[s]) sorted[used++] = (struct symbol_frequency){frequency[s], (uint16_t)s};
    qsort(sorted, (size_t)used, sizeof sorted[0], by_frequency);
    minimum_redundancy(sorted, used);
    int per_length[32] = {0};
    for (int i = 0; i < used; i++) per_length[sorted[i].key < 31 ? sorted[i].key : 31]++;
    /* Fold lengths beyond the limit into it, then lengthen the shortest codes that can give way
     * until the Kraft sum is exactly one again (as miniz does). */
    for (int length = limit + 1; length < 32; length++) {
        per_length[limit] += per_length[length];
        per_length[length] = 0;
    }
    uint32_t total = 0;
    for (int length = limit; length > 0; length--) total += (uint32_t)per_length[length] << (limit - length);
    while (total != (1u << limit)) {
        per_length[limit]--;
        for (int length = limit - 1; length > 0; length--)
            if (per_length[length]) {
                per_length[length]--;
                per_length[length + 1] += 2;
                break;
            }
        total--;
    }
    memset(lengths, 0, (size_t)count);
    int next = used;
    for (int length = 1; length <= limit; length++)
        for (int n = per_length[length]; n > 0; n--) lengths[sorted[--next].symbol] = (uint8_t)length;
}

/* Canonical codes for `lengths`, bit-reversed for deflate's LSB-first packing. */
static void canonical_codes(const uint8_t *lengths, int count, uint16_t *codes) {
    uint16_t per_length[MAX_CODE_BITS + 1] = {0}, next[MAX_CODE_BITS + 2];
    for (int s = 0; s < count; s++) per_length[lengths[s]]++;
    per_length[0] = 0;
    uint16_t code = 0;
    for (int length = 1; length <= MAX_CODE_BITS; length++) {
        code = (uint16_t)((code + per_length[length - 1]) << 1);
        next[length] = code;
    }
    for (int s = 0; s < count; s++) {
        int length = lengths[s];
        if (!length) {
            codes[s] = 0;
            continue;
        }
        uint16_t value = next[length]++, reversed = 0;
        for (int b = 0; b < length; b++) reversed = (uint16_t)(reversed << 1 | ((value >> b) & 1));
        codes[s] = reversed;
    }
}

/* ---- Output ------------------------------------------------------------------------------- */

static int reserve(struct iw_deflate *z, size_t more) {
    /* 8 bytes of slack: bits are flushed by whole 64-bit stores. */
    if (z->failed) return 0;
    if (z->length + more + 8 <= z->capacity) return 1;
    size_t capacity = z->capacity ? z->capacity : 4096;
    while (z->length + more + 8 > capacity) {
        if (capacity > SIZE_MAX / 2) {
            z->failed = 1;
            return 0;
        }
        capacity *= 2;
    }
    uint8_t *grown = realloc(z->data, capacity);
    if (!grown) {
        z->failed = 1;
        return 0;
    }
    z->data = grown;
    z->capacity = capacity;
    return 1;
}

/* Bits on their way out: a local copy of the stream's position, so the compiler can keep it in
 * registers through the symbol loop (a store through z->data could otherwise alias *z). */
struct bit_writer {
    uint8_t *out;
    uint64_t bits;
    int count;
};

/* Adds `count` (up to 32) bits to the at most 7 pending: stores 8 bytes every time and keeps only
 * the last partial byte's bits, so there is no branch (the stream keeps 8 bytes of slack for it). */
static inline void put_bits(struct bit_writer *w, uint32_t value, int count) {
    w->bits |= (uint64_t)value << w->count;
    w->count += count;
    memcpy(w->out, &w->bits, 8); /* little-endian hosts only (x86-64, arm64) */
    w->out += w->count >> 3;
    w->bits >>= w->count & ~7;
    w->count &= 7;
}

static struct bit_writer writer(struct iw_deflate *z) {
    return (struct bit_writer){z->data + z->length, z->bits, z->bit_count};
}

static void written(struct iw_deflate *z, const struct bit_writer *w) {
    z->length = (size_t)(w->out - z->data);
    z->bits = w->bits;
    z->bit_count = w->count;
}

static void align_to_byte(struct bit_writer *w) {
    while (w->count > 0) {
        *w->out++ = (uint8_t)w->bits;
        w->bits >>= 8;
        w->count = w->count > 8 ? w->count - 8 : 0;
    }
    w->bits = 0;
}

/* ---- Blocks -------------------------------------------------------------------------------- */

/* Symbols: a byte that repeats the byte before it (`previous` before the first) at least three more
 * times starts a run of up to 258 bytes at distance 1; every other byte is a literal. Both passes
 * find runs with these two functions, so they agree on the symbols. */

/* Bytes equal to the byte before them, as 0x80 in each such byte of an 8-byte word. */
static inline uint64_t repeated_bytes(const uint8_t *p) {
    uint64_t before, here;
    memcpy(&before, p - 1, 8);
    memcpy(&here, p, 8);
    const uint64_t x = before ^ here, low7 = 0x7F7F7F7F7F7F7F7Full;
    return ~(((x & low7) + low7) | x | low7);
}

/* Where the next run starts at or after `i` (`length` if none). */
static size_t next_run(const uint8_t *data, size_t length, size_t i, int previous) {
    if (i + 3 > length) return length;
    if (i == 0) {
        if (data[0] == previous && data[1] == data[0] && data[2] == data[0]) return 0;
        i = 1;
    }
    /* Eight bytes at a time, stepping by six so that every three neighbours share a word. */
    while (i + 8 <= length) {
        const uint64_t r = repeated_bytes(data + i), three = r & r >> 8 & r >> 16;
        if (three) return i + (size_t)(__builtin_ctzll(three) >> 3);
        i += 6;
    }
    for (; i + 3 <= length; i++)
        if (data[i - 1] == data[i] && data[i + 1] == data[i] && data[i + 2] == data[i]) return i;
    return length;
}

/* The length of the run at `start`, up to 258: eight bytes compared at a time. */
static size_t run_length(const uint8_t *data, size_t length, size_t start) {
    const size_t max = length - start < MAX_RUN ? length - start : MAX_RUN;
    const uint8_t b = data[start];
    const uint64_t repeated = 0x0101010101010101ull * b;
    size_t run = MIN_RUN;
    while (run + 8 <= max) {
        uint64_t word;
        memcpy(&word, data + start + run, 8);
        const uint64_t differ = word ^ repeated;
        if (differ) return run + (size_t)(__builtin_ctzll(differ) >> 3);
        run += 8;
    }
    while (run < max && data[start + run] == b) run++;
    return run;
}

static void write_stored(struct iw_deflate *z, const uint8_t *data, size_t length, int final) {
    do {
        size_t part = length < 65535 ? length : 65535;
        int last = final && part == length;
        if (!reserve(z, part + 16)) return;
        struct bit_writer w = writer(z);
        put_bits(&w, (uint32_t)last, 3); /* BTYPE 00 */
        align_to_byte(&w);
        uint8_t *p = w.out;
        p[0] = (uint8_t)part, p[1] = (uint8_t)(part >> 8);
        p[2] = (uint8_t)~part, p[3] = (uint8_t)(~part >> 8);
        memcpy(p + 4, data, part);
        w.out += 4 + part;
        written(z, &w);
        data += part;
        length -= part;
    } while (length > 0);
}

int iw_deflate_block(struct iw_deflate *z, const uint8_t *data, size_t length, int final) {
    const struct length_code *runs = lengths_table();
    uint32_t litlen_frequency[LITLEN_SYMBOLS] = {0}, dist_frequency[DIST_SYMBOLS] = {0};
    /* Literals counted in four tables, so that repeated bytes do not wait on each other's stores. */
    uint32_t counts[4][256];
    memset(counts, 0, sizeof counts);
    for (size_t i = 0; i < length;) {
        const size_t run = next_run(data, length, i, i == 0 ? z->previous : data[i - 1]);
        size_t k = i;
        for (; k + 4 <= run; k += 4) {
            counts[0][data[k]]++;
            counts[1][data[k + 1]]++;
            counts[2][data[k + 2]]++;
            counts[3][data[k + 3]]++;
        }
        for (; k < run; k++) counts[0][data[k]]++;
        if (run == length) break;
        const size_t n = run_length(data, length, run);
        litlen_frequency[runs[n].symbol]++;
        dist_frequency[0]++;
        i = run + n;
    }
    for (int b = 0; b < 256; b++) litlen_frequency[b] = counts[0][b] + counts[1][b] + counts[2][b] + counts[3][b];
    litlen_frequency[END_OF_BLOCK] = 1;

    uint8_t litlen_lengths[LITLEN_SYMBOLS], dist_lengths[DIST_SYMBOLS];
    code_lengths(litlen_frequency, LITLEN_SYMBOLS, MAX_CODE_BITS, litlen_lengths);
    code_lengths(dist_frequency, DIST_SYMBOLS, MAX_CODE_BITS, dist_lengths);
    int litlen_count = LITLEN_SYMBOLS, dist_count = DIST_SYMBOLS;
    while (litlen_count > 257 && !litlen_lengths[litlen_count - 1]) litlen_count--;
    while (dist_count > 1 && !dist_lengths[dist_count - 1]) dist_count--;
    uint8_t lengths[LITLEN_SYMBOLS + DIST_SYMBOLS]; /* both, as the header lists them */
    memcpy(lengths, litlen_lengths, (size_t)litlen_count);
    memcpy(lengths + litlen_count, dist_lengths, (size_t)dist_count);
    const int all = litlen_count + dist_count;

    /* The code lengths, run-length coded with 16 (repeat the last 3-6), 17 (3-10 zeros) and 18
     * (11-138 zeros). */
    uint8_t cl_symbols[LITLEN_SYMBOLS + DIST_SYMBOLS], cl_extra[LITLEN_SYMBOLS + DIST_SYMBOLS];
    int cl_count = 0;
    uint32_t cl_frequency[CODELEN_SYMBOLS] = {0};
    for (int i = 0; i < all;) {
        int value = lengths[i], run = 1;
        while (i + run < all && lengths[i + run] == value) run++;
        i += run;
        if (value == 0) {
            while (run >= 11) {
                int n = run < 138 ? run : 138;
                cl_symbols[cl_count] = 18, cl_extra[cl_count++] = (uint8_t)(n - 11);
                run -= n;
            }
            if (run >= 3) {
                cl_symbols[cl_count] = 17, cl_extra[cl_count++] = (uint8_t)(run - 3);
                run = 0;
            }
        } else {
            cl_symbols[cl_count] = (uint8_t)value, cl_extra[cl_count++] = 0;
            run--;
            while (run >= 3) {
                int n = run < 6 ? run : 6;
                cl_symbols[cl_count] = 16, cl_extra[cl_count++] = (uint8_t)(n - 3);
                run -= n;
            }
        }
        while (run-- > 0) cl_symbols[cl_count] = (uint8_t)value, cl_extra[cl_count++] = 0;
    }
    for (int i = 0; i < cl_count; i++) cl_frequency[cl_symbols[i]]++;
    uint8_t cl_lengths[CODELEN_SYMBOLS];
    code_lengths(cl_frequency, CODELEN_SYMBOLS, MAX_CODELEN_BITS, cl_lengths);
    static const uint8_t order[CODELEN_SYMBOLS] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    int cl_order_count = CODELEN_SYMBOLS;
    while (cl_order_count > 4 && !cl_lengths[order[cl_order_count - 1]]) cl_order_count--;

    /* The block's exact size both ways; stored if Huffman coding would not shrink it. */
    static const uint8_t cl_extra_bits[CODELEN_SYMBOLS] = {[16] = 2, [17] = 3, [18] = 7};
    uint64_t bits = 3 + 5 + 5 + 4 + 3 * (uint64_t)cl_order_count;
    for (int i = 0; i < cl_count; i++) bits += cl_lengths[cl_symbols[i]] + cl_extra_bits[cl_symbols[i]];
    for (int s = 0; s < LITLEN_SYMBOLS; s++) {
        uint32_t extra = s > 256 && s < 285 ? (uint32_t)(s < 265 ? 0 : (s - 261) / 4) : 0;
        bits += (uint64_t)litlen_frequency[s] * (litlen_lengths[s] + extra);
    }
    bits += (uint64_t)dist_frequency[0] * dist_lengths[0];
    const uint64_t stored_bits = 8 * ((uint64_t)length + 5 * (length / 65535 + 1)) + 8;
    if (bits > stored_bits) {
        write_stored(z, data, length, final);
    } else {
        if (!reserve(z, (size_t)(bits / 8) + 16)) return -1;
        uint16_t litlen_codes[LITLEN_SYMBOLS], dist_codes[DIST_SYMBOLS], cl_codes[CODELEN_SYMBOLS];
        canonical_codes(litlen_lengths, LITLEN_SYMBOLS, litlen_codes);
        canonical_codes(dist_lengths, DIST_SYMBOLS, dist_codes);
        canonical_codes(cl_lengths, CODELEN_SYMBOLS, cl_codes);
        struct bit_writer w = writer(z);
        put_bits(&w, (uint32_t)(final ? 1 : 0) | 2u << 1, 3);
        put_bits(&w, (uint32_t)(litlen_count - 257), 5);
        put_bits(&w, (uint32_t)(dist_count - 1), 5);
        put_bits(&w, (uint32_t)(cl_order_count - 4), 4);
        for (int i = 0; i < cl_order_count; i++) put_bits(&w, cl_lengths[order[i]], 3);
        for (int i = 0; i < cl_count; i++) {
            put_bits(&w, cl_codes[cl_symbols[i]], cl_lengths[cl_symbols[i]]);
            if (cl_extra_bits[cl_symbols[i]]) put_bits(&w, cl_extra[i], cl_extra_bits[cl_symbols[i]]);
        }
        uint32_t literal[256]; /* code | length << 16, for the literal loop */
        for (int b = 0; b < 256; b++) literal[b] = litlen_codes[b] | (uint32_t)litlen_lengths[b] << 16;
        for (size_t i = 0; i < length;) {
            const size_t run = next_run(data, length, i, i == 0 ? z->previous : data[i - 1]);
            size_t k = i;
            /* Three literals (at most 45 bits) per store. */
            for (; k + 3 <= run; k += 3) {
                const uint32_t a = literal[data[k]], b = literal[data[k + 1]], c = literal[data[k + 2]];
                const int la = (int)(a >> 16), lb = (int)(b >> 16);
                put_bits(&w, (a & 0xFFFF) | (b & 0xFFFF) << la, la + lb);
                put_bits(&w, c & 0xFFFF, (int)(c >> 16));
            }
            for (; k < run; k++) put_bits(&w, literal[data[k]] & 0xFFFF, (int)(literal[data[k]] >> 16));
            if (run == length) break;
            const size_t n = run_length(data, length, run);
            const struct length_code c = runs[n];
            put_bits(&w, litlen_codes[c.symbol] | (uint32_t)c.extra << litlen_lengths[c.symbol], litlen_lengths[c.symbol] + c.extra_bits);
            put_bits(&w, dist_codes[0], dist_lengths[0]);
            i = run + n;
        }
        put_bits(&w, litlen_codes[END_OF_BLOCK], litlen_lengths[END_OF_BLOCK]);
        written(z, &w);
    }
    if (length > 0) z->previous = data[length - 1];
    z->adler = libdeflate_adler32(z->adler, data, length);
    return z->failed ? -1 : 0;
}

int iw_deflate_begin(struct iw_deflate *z, size_t prefix, size_t capacity_hint) {
    memset(z, 0, sizeof *z);
    z->previous = -1;
    z->adler = 1;
    if (!reserve(z, prefix + capacity_hint + 2)) return -1;
    memset(z->data, 0, prefix);
    z->length = prefix;
    z->data[z->length++] = 0x78; /* deflate, 32 KiB window */
    z->data[z->length++] = 0x01; /* fastest; header check: 0x7801 % 31 == 0 */
    return 0;
}

int iw_deflate_end(struct iw_deflate *z) {
    if (!reserve(z, 16)) return -1;
    struct bit_writer w = writer(z);
    align_to_byte(&w);
    written(z, &w);
    uint8_t *p = z->data + z->length;
    p[0] = (uint8_t)(z->adler >> 24), p[1] = (uint8_t)(z->adler >> 16), p[2] = (uint8_t)(z->adler >> 8), p[3] = (uint8_t)z->adler;
    z->length += 4;
    return 0;
}

void iw_deflate_free(struct iw_deflate *z) {
    free(z->data);
    z->data = NULL;
    z->length = z->capacity = 0;
}
