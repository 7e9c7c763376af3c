/* AC refinement scans of progressive JPEGs, decoded faster than libjpeg-turbo 2.x does, with the
 * same coefficients as its decode_mcu_AC_refine (jdphuff.c) and so the same pixels.
 *
 * A refinement scan sends one more bit of every coefficient of a band (usually 1..63) of every
 * block: a correction bit for each coefficient already nonzero, and Huffman-coded runs of the zero
 * ones, each run ending at one that becomes +-1. libjpeg walks the band one coefficient at a time,
 * branching on whether it is zero and on each correction bit, with a bounds check per bit: the
 * loop a progressive file's decode spends most of its time in. Here a
 * block's nonzero coefficients become one 64-bit mask (in zigzag order), so a run's end is found
 * by clearing bits, and the correction bits of the nonzero coefficients a run passes are read in
 * one go, deposited on their coefficients and applied once per block. Where the CPU has fast BMI2,
 * pdep does both steps in one instruction each, without a branch per bit (the block decoder is
 * written once, in iw_jpeg_refine_block.h, and compiled both ways).
 *
 * The hook replaces only the per-block method (decode_mcu) of refinement scans, in libjpeg's own
 * progressive decoder: it keeps every other scan, the markers, restarts, the coefficient buffer and
 * the output pass. A block is decoded here only when nothing unusual is in its way; anything else
 * (a marker or the end of the data within the next bytes it reads, a restart due, data already
 * known to be short, a Huffman code no table has, a new coefficient larger than 1) hands the block
 * to libjpeg's decode_mcu from the state it had before, which then does what it always does.
 * Undoing a half-decoded block is libjpeg's own rule: coefficients made nonzero are zeroed again;
 * corrections are idempotent (one is applied only when its bit is still clear). In damaged data
 * only libjpeg's count of warnings about bytes it skips before a marker may differ, as this decoder
 * reads bytes ahead sooner: no pixel or error does (a warning, which the decoders accept).
 *
 * The private structures mirrored below are libjpeg-turbo's from 2.0 to 3.0 (jdphuff.c, jdhuff.h,
 * jpegint.h; 3.1 added a member to the entropy decoder), so the hook is built only against those
 * headers; and before a scan is hooked, the fields read here are checked against what
 * start_pass_phuff_decoder has just set (the active Huffman table's back link to cinfo's own table,
 * the empty bit buffer, the restart count), so a library of another layout loaded at run time is
 * left alone. */
#include "iw_jpeg_refine.h"
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* (On 32-bit systems libjpeg's bit buffer is 32 bits: not mirrored.) */
#if SIZE_MAX == UINT64_MAX && defined(LIBJPEG_TURBO_VERSION_NUMBER) && LIBJPEG_TURBO_VERSION_NUMBER >= 2000000 \
    && LIBJPEG_TURBO_VERSION_NUMBER < 3001000
#define IW_REFINE_SUPPORTED 1
#else
#define IW_REFINE_SUPPORTED 0
#endif

#if IW_REFINE_SUPPORTED

/* jdhuff.h's d_derived_tbl (JLONG is long). */
struct iw_derived_tbl {
    long maxcode[18];
    long valoffset[18];
    JHUFF_TBL *pub;
    int lookup[256];
};

/* jpegint.h's jpeg_entropy_decoder and jdphuff.c's phuff_entropy_decoder. */
struct iw_phuff {
    struct {
        void (*start_pass)(j_decompress_ptr cinfo);
        boolean (*decode_mcu)(j_decompress_ptr cinfo, JBLOCKROW *blocks);
        boolean insufficient_data;
    } pub;
    struct {
        size_t get_buffer;
        int bits_left;
    } bitstate;
    struct {
        unsigned int EOBRUN;
        int last_dc_val[MAX_COMPS_IN_SCAN];
    } saved;
    unsigned int restarts_to_go;
    struct iw_derived_tbl *derived_tbls[NUM_HUFF_TBLS];
    struct iw_derived_tbl *ac_derived_tbl;
};

/* Zigzag index -> natural position, with libjpeg's 16 extra entries (a run that overflows the band
 * writes its coefficient at [Se + 1]). */
static const int natural_order[DCTSIZE2 + 16] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48,
    41, 34, 27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23,
    30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
    63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63};

/* For each byte of a natural-order mask (8 positions), the same bits in zigzag order. */
static uint64_t zigzag_bits[8][256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void make_zigzag_bits(void) {
    int zigzag_of[DCTSIZE2];
    for (int k = 0; k < DCTSIZE2; k++) zigzag_of[natural_order[k]] = k;
    for (int byte = 0; byte < 8; byte++)
        for (int v = 0; v < 256; v++) {
            uint64_t bits = 0;
            for (int j = 0; j < 8; j++)
                if (v & (1 << j)) bits |= (uint64_t)1 << zigzag_of[8 * byte + j];
            zigzag_bits[byte][v] = bits;
        }
}

#define IW_INLINE static inline __attribute__((always_inline))

/* Bit k set when the coefficient at zigzag index k is nonzero. */
IW_INLINE uint64_t nonzero_mask(const JCOEF *block) {
    uint64_t natural = 0;
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128();
    for (int i = 0; i < 4; i++) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(block + 16 * i));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(block + 16 * i + 8));
        __m128i zeros = _mm_packs_epi16(_mm_cmpeq_epi16(a, zero), _mm_cmpeq_epi16(b, zero));
        natural |= (uint64_t)(uint16_t)_mm_movemask_epi8(zeros) << (16 * i);
    }
    natural = ~natural;
#else
    for (int i = 0; i < DCTSIZE2; i++) natural |= (uint64_t)(block[i] != 0) << i;
#endif
    uint64_t zigzag = 0;
    for (int byte = 0; byte < 8; byte++) zigzag |= zigzag_bits[byte][(natural >> (8 * byte)) & 0xFF];
    return zigzag;
}

/* libjpeg's bit buffer: the low `bits` bits of `buffer` are the next ones, first bit highest. */
struct iw_bits {
    const JOCTET *next;
    const JOCTET *end;
    uint64_t buffer;
    int bits;
};

#define IW_MIN_BITS 57 /* what libjpeg's fill leaves at least (MIN_GET_BITS on 64 bits) */

/* Fills to at least IW_MIN_BITS bits; 0 when the bytes in memory end or a marker (0xFF not
 * followed by a stuffed 0x00) comes first: then libjpeg's own decoder takes the block. */
IW_INLINE int fill(struct iw_bits *b) {
    while (b->bits < IW_MIN_BITS) {
        if (b->end - b->next >= 8) {
            uint64_t word;
            memcpy(&word, b->next, 8);
            uint64_t inverted = ~word; /* a 0xFF byte is a zero byte here */
            if (((inverted - 0x0101010101010101ULL) & ~inverted & 0x8080808080808080ULL) == 0) {
                int take = (64 - b->bits) >> 3; /* whole bytes that fit: 1..8 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
                uint64_t big = word;
#else
                uint64_t big = __builtin_bswap64(word);
#endif
                b->buffer = take == 8 ? big : (b->buffer << (8 * take)) | (big >> (64 - 8 * take));
                b->bits += 8 * take;
                b->next += take;
                continue;
            }
        }
        if (b->next >= b->end) return 0;
        unsigned c = *b->next;
        if (c == 0xFF) {
            if (b->end - b->next < 2 || b->next[1] != 0) return 0;
            b->next += 2;
        } else {
            b->next += 1;
        }
        b->buffer = (b->buffer << 8) | c;
        b->bits += 8;
    }
    return 1;
}

/* n (<= 32) bits; the caller has made sure they are there. */
IW_INLINE uint32_t take_bits(struct iw_bits *b, int n) {
    b->bits -= n;
    return (uint32_t)((b->buffer >> b->bits) & (((uint64_t)1 << n) - 1));
}

/* One Huffman symbol (needs 17 bits in the buffer), or -1 for a code the table does not have. */
IW_INLINE int huffman(struct iw_bits *b, const struct iw_derived_tbl *table) {
    int entry = table->lookup[(b->buffer >> (b->bits - 8)) & 0xFF];
    int length = entry >> 8;
    if (length <= 8) {
        b->bits -= length;
        return entry & 0xFF;
    }
    length = 9;
    long code = (long)((b->buffer >> (b->bits - length)) & 0x1FF);
    while (code > table->maxcode[length]) {
        length++;
        code = (long)((b->buffer >> (b->bits - length)) & (((uint64_t)1 << length) - 1));
    }
    if (length > 16) return -1;
    b->bits -= length;
    return table->pub->huffval[(int)(code + table->valoffset[length]) & 0xFF];
}

/* What a correction bit (0 or 1) adds to a coefficient: for a 1, p1 away from zero, unless its bit
 * p1 is set already (libjpeg's rule, which makes a second pass over a half-decoded block
 * harmless). Without a branch: the bits are as good as random. */
IW_INLINE int growth(int coefficient, int p1, int bit) {
    int grow = bit & ((coefficient & p1) == 0);
    int step = coefficient >= 0 ? p1 : -p1;
    return step & -grow;
}

/* The zigzag indexes up to Se, as a mask. */
IW_INLINE uint64_t band_through(int Se) { return Se == 63 ? ~(uint64_t)0 : ((uint64_t)1 << (Se + 1)) - 1; }

/* A refinement scan's next symbol in a block: RUN_ZEROS with the zeros to pass (r) and the value of
 * the coefficient that ends them (0 for a run of 16 zeros alone); END_OF_BAND with the blocks whose
 * rest has no new coefficient (this one included) in `run`; HAND_BACK where libjpeg must take
 * the block. */
enum { HAND_BACK = 0, RUN_ZEROS = 1, END_OF_BAND = 2 };

IW_INLINE int next_symbol(struct iw_bits *b, const struct iw_derived_tbl *table, int p1, int *r, int *value,
                          unsigned int *run) {
    if (b->bits < IW_MIN_BITS && !fill(b)) return HAND_BACK;
    int symbol = huffman(b, table);
    if (symbol < 0) return HAND_BACK;
    int s = symbol & 15;
    *r = symbol >> 4;
    *value = 0;
    if (s) {
        if (s != 1) return HAND_BACK; /* libjpeg warns, then goes on as if 1 */
        *value = take_bits(b, 1) ? p1 : -p1;
    } else if (*r != 15) {
        *run = 1u << *r; /* this block and 2^r - 1 (+ r bits) more */
        if (*r) *run += take_bits(b, *r);
        return END_OF_BAND;
    }
    return RUN_ZEROS;
}

/* Writes a newly nonzero coefficient at zigzag index `target`; its natural position. */
IW_INLINE int place(JCOEF *block, int target, int value) {
    int position = natural_order[target];
    block[position] = (JCOEF)value;
    return position;
}

#if defined(__has_builtin)
#if __has_builtin(__builtin_bitreverse64)
#define IW_HAS_BITREVERSE 1
#endif
#endif

IW_INLINE uint64_t reverse_bits(uint64_t v) {
#if defined(IW_HAS_BITREVERSE)
    return __builtin_bitreverse64(v);
#else
    v = ((v >> 1) & 0x5555555555555555ULL) | ((v & 0x5555555555555555ULL) << 1);
    v = ((v >> 2) & 0x3333333333333333ULL) | ((v & 0x3333333333333333ULL) << 2);
    v = ((v >> 4) & 0x0F0F0F0F0F0F0F0FULL) | ((v & 0x0F0F0F0F0F0F0F0FULL) << 4);
    return __builtin_bswap64(v);
#endif
}

/* The nth lowest set bit of mask (0 when it has no more), by clearing the n below it. */
IW_INLINE uint64_t nth_set_portable(uint64_t mask, int n) {
    for (int i = 0; i < n && mask; i++) mask &= mask - 1;
    return mask & (0 - mask);
}

/* The low bits of `bits` on the set bits of `mask`, lowest first (what pdep does). */
IW_INLINE uint64_t deposit_portable(uint64_t bits, uint64_t mask) {
    uint64_t out = 0;
    for (; mask && bits; bits >>= 1) {
        uint64_t lowest = mask & (0 - mask);
        if (bits & 1) out |= lowest;
        mask ^= lowest;
    }
    return out;
}

#define IW_REFINE_NAME refine_block
#define IW_REFINE_GATHER gather_portable
#define IW_REFINE_ATTR
#define IW_NTH_SET nth_set_portable
#define IW_DEPOSIT deposit_portable
#include "iw_jpeg_refine_block.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define IW_BMI2 __attribute__((target("popcnt,bmi,bmi2")))

/* pdep is both steps in one instruction: a run's end, and the bits on their coefficients. */
IW_BMI2 IW_INLINE uint64_t nth_set_bmi2(uint64_t mask, int n) { return _pdep_u64((uint64_t)1 << n, mask); }
IW_BMI2 IW_INLINE uint64_t deposit_bmi2(uint64_t bits, uint64_t mask) { return _pdep_u64(bits, mask); }

#define IW_REFINE_NAME refine_block_bmi2
#define IW_REFINE_GATHER gather_bmi2
#define IW_REFINE_ATTR IW_BMI2
#define IW_NTH_SET nth_set_bmi2
#define IW_DEPOSIT deposit_bmi2
#include "iw_jpeg_refine_block.h"

/* pdep is one fast instruction on Intel since Haswell and AMD since Zen 3; microcode, up to
 * hundreds of cycles, on Zen 1 and 2 (family 17h) and Excavator (15h). */
static int bmi2_is_fast(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("bmi2") || !__builtin_cpu_supports("popcnt")) return 0;
    return !(__builtin_cpu_is("amdfam17h") || __builtin_cpu_is("amdfam15h"));
}
#endif

typedef int (*iw_refine_fn)(struct iw_bits *, JCOEF *, int, int, int, const struct iw_derived_tbl *, unsigned int *);
/* The fastest block decoder this CPU runs (chosen once, in make_tables). */
static iw_refine_fn refine = refine_block;

static boolean fast_refine(j_decompress_ptr cinfo, JBLOCKROW *blocks) {
    struct iw_phuff *entropy = (struct iw_phuff *)(void *)cinfo->entropy;
    struct iw_refine_hook *hook = cinfo->client_data;
    if ((cinfo->restart_interval && entropy->restarts_to_go == 0) || entropy->pub.insufficient_data
        || cinfo->unread_marker != 0) {
        return hook->decode_mcu(cinfo, blocks);
    }
    struct jpeg_source_mgr *source = cinfo->src;
    struct iw_bits b = {source->next_input_byte, source->next_input_byte + source->bytes_in_buffer,
                        entropy->bitstate.get_buffer, entropy->bitstate.bits_left};
    unsigned int run = entropy->saved.EOBRUN;
    iw_refine_fn decode = hook->mode == IW_REFINE_PORTABLE ? refine_block : refine;
    if (!decode(&b, blocks[0][0], cinfo->Ss, cinfo->Se, cinfo->Al, entropy->ac_derived_tbl, &run)) {
        return hook->decode_mcu(cinfo, blocks); /* from the state before this block */
    }
    source->next_input_byte = b.next;
    source->bytes_in_buffer = (size_t)(b.end - b.next);
    entropy->bitstate.get_buffer = (size_t)b.buffer;
    entropy->bitstate.bits_left = b.bits;
    entropy->saved.EOBRUN = run;
    if (cinfo->restart_interval) entropy->restarts_to_go--;
    hook->blocks++;
    return TRUE;
}

/* What start_pass_phuff_decoder has just set for an AC refinement scan, read through the mirror:
 * if any of it is not where it should be, the layout is not the one known here. */
static int layout_matches(j_decompress_ptr cinfo, const struct iw_phuff *entropy) {
    if (cinfo->comps_in_scan != 1 || !cinfo->cur_comp_info[0]) return 0;
    int table = cinfo->cur_comp_info[0]->ac_tbl_no;
    if (table < 0 || table >= NUM_HUFF_TBLS || !entropy->ac_derived_tbl) return 0;
    return entropy->derived_tbls[table] == entropy->ac_derived_tbl
        && entropy->ac_derived_tbl->pub == cinfo->ac_huff_tbl_ptrs[table]
        && entropy->ac_derived_tbl->maxcode[17] == 0xFFFFFL
        && entropy->bitstate.bits_left == 0 && entropy->bitstate.get_buffer == 0
        && entropy->saved.EOBRUN == 0 && entropy->restarts_to_go == cinfo->restart_interval
        && !entropy->pub.insufficient_data && entropy->pub.decode_mcu != NULL;
}

static void hooked_start_pass(j_decompress_ptr cinfo) {
    struct iw_refine_hook *hook = cinfo->client_data;
    hook->start_pass(cinfo);
    struct iw_phuff *entropy = (struct iw_phuff *)(void *)cinfo->entropy;
    int refinement = cinfo->Ss > 0 && cinfo->Ah != 0 && cinfo->Se < DCTSIZE2 && cinfo->Al <= 13;
    if (refinement && !cinfo->arith_code && layout_matches(cinfo, entropy)) {
        hook->decode_mcu = entropy->pub.decode_mcu; /* libjpeg's decode_mcu_AC_refine */
        entropy->pub.decode_mcu = fast_refine;
    }
}

static void make_tables(void) {
    make_zigzag_bits();
#if defined(__x86_64__)
    if (bmi2_is_fast()) refine = refine_block_bmi2;
#endif
}

#endif /* IW_REFINE_SUPPORTED */

void iw_refine_install(j_decompress_ptr cinfo, struct iw_refine_hook *hook) {
    if (hook->installed || hook->mode == IW_REFINE_LIBJPEG) return;
    hook->installed = 1;
#if IW_REFINE_SUPPORTED
    /* Arithmetic-coded files have another entropy decoder (jdarith.c). */
    if (!cinfo->progressive_mode || cinfo->arith_code || !cinfo->entropy || cinfo->client_data != (void *)hook)
        return;
    struct iw_phuff *entropy = (struct iw_phuff *)(void *)cinfo->entropy;
    if (!entropy->pub.start_pass) return;
    pthread_once(&tables_once, make_tables);
    hook->start_pass = entropy->pub.start_pass;
    entropy->pub.start_pass = hooked_start_pass;
#else
    (void)cinfo;
#endif
}
