#include "iw_resample.h"
#include "iw_pixels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <immintrin.h>
#define IW_RESAMPLE_X86 1
#endif

/* Weights are 16-bit integers (so that SSE2's multiply-add takes two taps at once) of up to 15
 * fractional bits per axis: as many as the axis' largest weight leaves room for. */
#define IW_RESAMPLE_MAX_BITS 15

/* One axis: output pixel o is the weighted sum of input pixels first[o] .. first[o] + taps - 1,
 * weights[o * taps + k], the same number of taps for every output pixel (weights of 0 pad a
 * footprint that covers fewer pixels; windows at the end of the axis start earlier), so that the
 * loops over taps have no per-pixel length. */
typedef struct {
    uint32_t *first;
    int16_t *weights; /* one spare at the end: the vector loops read weights two at a time */
    uint32_t taps;
    int bits;         /* the weights sum to exactly 1 << bits */
} iw_axis;

struct iw_resampler {
    uint32_t in_w, in_h, out_w, out_h;
    int channels;
    iw_axis across, down;
    uint8_t *ring;      /* the last `down.taps` input rows, resampled across (out_w * channels each) */
    int32_t *sums;      /* one output row being summed (the portable loop) */
    uint8_t *converted; /* push_rgba's row in the resampler's channels; with 4, a row premultiplied */
    uint8_t *output;
    int owns_output;
    int sse41; /* the CPU has SSE4.1: rows go through the vector versions (the same sums) */
    int premultiplied; /* a row with a pixel not opaque came: output rows are divided by alpha */
    uint32_t next_in, next_out;
};

static void axis_free(iw_axis *a) {
    free(a->first);
    free(a->weights);
}

/* The input pixels that output pixel o's footprint [o * scale, (o + 1) * scale) overlaps. */
static void footprint(uint32_t o, double scale, uint32_t in, uint32_t *first, uint32_t *last) {
    const double start = o * scale, end = start + scale;
    *first = (uint32_t)start;
    if (*first > in - 1) *first = in - 1;
    const double last_f = floor(end - 1e-9);
    *last = last_f < 0 ? 0 : (uint32_t)last_f;
    if (*last > in - 1) *last = in - 1;
    if (*last < *first) *last = *first;
}

/* Reducing (or one input pixel): the overlap of each output pixel's footprint [o * scale, (o + 1) * scale) with each input pixel,
 * over the footprint's length, rounded to integers that sum to exactly 1 << bits (the rounding
 * remainder goes to the largest weight). An even number of taps where the axis is long enough,
 * so that the vector loops take them in pairs. The same size on both sides: one tap of weight 1. */
/* An enlarging axis (out > in, in >= 2): each output pixel's centre, mapped into the input,
 * between two input pixels' centres, weighted by its distance to each (a triangle filter:
 * bilinear, as Pillow's and libvips' enlargements are at their simplest); at the ends, the edge
 * pixel. Two taps, weights that sum to exactly 1 << 14 (a weight may be all of it: 1 << 15 would
 * not fit an int16_t). */
static int axis_make_enlarging(iw_axis *a, uint32_t in, uint32_t out) {
    const double scale = (double)in / (double)out;
    const int32_t one = (int32_t)1 << 14;
    a->taps = 2;
    a->bits = 14;
    a->first = malloc(sizeof(uint32_t) * out);
    a->weights = calloc((size_t)out * 2 + 1, sizeof(int16_t));
    if (!a->first || !a->weights) {
        axis_free(a);
        return -1;
    }
    for (uint32_t o = 0; o < out; o++) {
        double centre = (o + 0.5) * scale - 0.5;
        if (centre < 0) centre = 0;
        if (centre > in - 1) centre = in - 1;
        uint32_t first = (uint32_t)centre;
        if (first > in - 2) first = in - 2;
        const int32_t right = (int32_t)lrint((centre - first) * one);
        a->first[o] = first;
        a->weights[(size_t)o * 2] = (int16_t)(one - right);
        a->weights[(size_t)o * 2 + 1] = (int16_t)right;
    }
    return 0;
}

static int axis_make(iw_axis *a, uint32_t in, uint32_t out) {
    memset(a, 0, sizeof *a);
    if (out > in && in >= 2) return axis_make_enlarging(a, in, out);
    const double scale = (double)in / (double)out;
    /* The most input pixels one footprint covers, made even where the axis is long enough. */
    uint32_t taps = 1;
    for (uint32_t o = 0; o < out; o++) {
        uint32_t first, last;
        footprint(o, scale, in, &first, &last);
        if (last - first + 1 > taps) taps = last - first + 1;
    }
    if (taps % 2 == 1 && taps < in && in != out) taps++;
    a->taps = taps;
    a->first = malloc(sizeof(uint32_t) * out);
    a->weights = calloc((size_t)out * taps + 1, sizeof(int16_t));
    double *exact = malloc(sizeof(double) * taps);
    if (!a->first || !a->weights || !exact) {
        free(exact);
        axis_free(a);
        return -1;
    }
    for (int bits = IW_RESAMPLE_MAX_BITS; bits >= 1; bits--) {
        const int32_t one = (int32_t)1 << bits;
        int fits = 1;
        for (uint32_t o = 0; o < out && fits; o++) {
            const double start = o * scale, end = start + scale;
            uint32_t first, last;
            footprint(o, scale, in, &first, &last);
            const uint32_t window = first < in - taps ? first : in - taps;
            int16_t *w = a->weights + (size_t)o * taps;
            int64_t total = 0;
            uint32_t largest = first - window;
            for (uint32_t k = 0; k < taps; k++) {
                const uint32_t x = window + k;
                double overlap = 0;
                if (x >= first && x <= last) {
                    const double lo = start > x ? start : (double)x;
                    const double hi = end < x + 1 ? end : (double)(x + 1);
                    overlap = hi > lo ? hi - lo : 0;
                }
                exact[k] = overlap / scale * one;
                total += lrint(exact[k]);
                if (exact[k] > exact[largest]) largest = k;
            }
            for (uint32_t k = 0; k < taps; k++) {
                const int64_t v = lrint(exact[k]) + (k == largest ? one - total : 0);
                if (v < 0 || v > INT16_MAX) fits = 0;
                w[k] = (int16_t)v;
            }
            a->first[o] = window;
        }
        if (fits) {
            a->bits = bits;
            free(exact);
            return 0;
        }
    }
    free(exact);
    axis_free(a);
    return -1;
}

static inline uint8_t clamp_byte(int32_t sum, int bits) {
    sum >>= bits;
    return sum < 0 ? 0 : sum > 255 ? 255 : (uint8_t)sum;
}

/* One row across: `in` of in_w pixels to `out` of out_w pixels. */
static void row_across_scalar(const iw_resampler *r, const uint8_t *in, uint8_t *out) {
    const int c = r->channels;
    if (r->in_w == r->out_w) {
        memcpy(out, in, (size_t)r->in_w * c);
        return;
    }
    const iw_axis *a = &r->across;
    const uint32_t taps = a->taps;
    const int32_t half = (int32_t)1 << (a->bits - 1);
    for (uint32_t o = 0; o < r->out_w; o++) {
        const uint8_t *p = in + (size_t)a->first[o] * c;
        const int16_t *w = a->weights + (size_t)o * taps;
        uint8_t *q = out + (size_t)o * c;
        for (int ch = 0; ch < c; ch++) {
            int32_t s = half;
            for (uint32_t k = 0; k < taps; k++) s += p[(size_t)k * c + ch] * w[k];
            q[ch] = clamp_byte(s, a->bits);
        }
    }
}

/* Output row o down from the ring, which holds rows first[o] .. first[o] + taps - 1. */
static void row_down_scalar(iw_resampler *r, uint32_t o) {
    const size_t n = (size_t)r->out_w * r->channels;
    const iw_axis *a = &r->down;
    const uint32_t taps = a->taps;
    uint8_t *out = r->output + (size_t)o * n;
    if (r->in_h == r->out_h) {
        memcpy(out, r->ring + (size_t)(o % taps) * n, n);
        return;
    }
    const int16_t *w = a->weights + (size_t)o * taps;
    int32_t *sums = r->sums;
    for (size_t i = 0; i < n; i++) sums[i] = (int32_t)1 << (a->bits - 1);
    for (uint32_t k = 0; k < taps; k++) {
        const uint8_t *row = r->ring + (size_t)((a->first[o] + k) % taps) * n;
        const int32_t wk = w[k];
        for (size_t i = 0; i < n; i++) sums[i] += row[i] * wk;
    }
    for (size_t i = 0; i < n; i++) out[i] = clamp_byte(sums[i], a->bits);
}

#ifdef IW_RESAMPLE_X86
/* Two 16-bit weights in one 32-bit lane, as _mm_madd_epi16 pairs them with two 16-bit values. */
static inline __attribute__((always_inline)) int32_t weight_pair(const int16_t *w) {
    int32_t pair;
    memcpy(&pair, w, 4);
    return pair;
}

/* One output pixel's sums across, two taps at a time: the two pixels' channels interleaved as
 * 16-bit values (r0 r1 g0 g1 …), one multiply-add by the two weights, one 32-bit sum per channel:
 * the scalar loop's sums exactly (integers, no rounding before the shift). `careful`: the window
 * lies at the row's end, where eight bytes from a pair's first pixel may run past the row (and a
 * last odd tap stands alone), so only the pair's own bytes are read. */
__attribute__((target("sse4.1"))) static inline __attribute__((always_inline)) __m128i across_sums(
    const uint8_t *p, const int16_t *w, uint32_t taps, int c, __m128i half, __m128i interleave, int careful) {
    __m128i acc = half;
    for (uint32_t k = 0; k < taps; k += 2, p += 2 * c) {
        __m128i px;
        if (!careful) {
            px = _mm_loadl_epi64((const __m128i *)p);
        } else {
            uint8_t bytes[8] = {0};
            memcpy(bytes, p, k + 1 < taps ? (size_t)2 * c : (size_t)c);
            px = _mm_loadl_epi64((const __m128i *)bytes);
        }
        acc = _mm_add_epi32(acc, _mm_madd_epi16(_mm_shuffle_epi8(px, interleave), _mm_set1_epi32(weight_pair(w + k))));
    }
    return acc;
}

/* The pixels of a row across for 3 or 4 channels (a constant once inlined). Windows whose eight-
 * byte loads stay inside the row (all but the last few) take unchecked loads, four output pixels
 * at a time, packed to bytes together and stored in one go (three channels: compacted first). */
__attribute__((target("sse4.1"))) static inline __attribute__((always_inline)) void across_row(
    const iw_resampler *r, const uint8_t *in, uint8_t *out, int c) {
    const iw_axis *a = &r->across;
    const uint32_t taps = a->taps;
    const int bits = a->bits;
    const __m128i half = _mm_set1_epi32((int32_t)1 << (bits - 1));
    const __m128i interleave = c == 4 ? _mm_setr_epi8(0, -1, 4, -1, 1, -1, 5, -1, 2, -1, 6, -1, 3, -1, 7, -1)
                                      : _mm_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
    const __m128i compact = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
    /* Windows are safe up to `safe` (first[] never decreases): an even number of taps whose last
     * pair's eight bytes end inside the row. */
    const size_t row_bytes = (size_t)r->in_w * c, reach = (size_t)(taps - 2) * c + 8;
    uint32_t safe = taps % 2 == 0 ? r->out_w : 0;
    while (safe > 0 && (size_t)a->first[safe - 1] * c + reach > row_bytes) safe--;
    uint32_t o = 0;
    for (; o + 4 <= safe; o += 4) {
        __m128i s[4];
        for (int j = 0; j < 4; j++)
            s[j] = _mm_srai_epi32(
                across_sums(in + (size_t)a->first[o + j] * c, a->weights + (size_t)(o + j) * taps, taps, c, half, interleave, 0), bits);
        __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(s[0], s[1]), _mm_packs_epi32(s[2], s[3]));
        uint8_t *q = out + (size_t)o * c;
        if (c == 4) {
            _mm_storeu_si128((__m128i *)q, bytes);
        } else {
            bytes = _mm_shuffle_epi8(bytes, compact);
            _mm_storel_epi64((__m128i *)q, bytes);
            const int32_t tail = _mm_cvtsi128_si32(_mm_srli_si128(bytes, 8));
            memcpy(q + 8, &tail, 4);
        }
    }
    for (; o < r->out_w; o++) {
        const __m128i sums = across_sums(in + (size_t)a->first[o] * c, a->weights + (size_t)o * taps, taps, c, half, interleave, o >= safe);
        const __m128i v = _mm_srai_epi32(sums, bits);
        const int32_t packed = _mm_cvtsi128_si32(_mm_packus_epi16(_mm_packs_epi32(v, v), v));
        if (c == 4) {
            memcpy(out + (size_t)o * 4, &packed, 4);
        } else {
            memcpy(out + (size_t)o * 3, &packed, 3);
        }
    }
}

__attribute__((target("sse4.1"))) static void row_across_sse41(const iw_resampler *r, const uint8_t *in, uint8_t *out) {
    if (r->in_w == r->out_w || (r->channels != 3 && r->channels != 4)) {
        row_across_scalar(r, in, out);
    } else if (r->channels == 4) {
        across_row(r, in, out, 4);
    } else {
        across_row(r, in, out, 3);
    }
}

/* Sixteen bytes of the output row at a time: the rows of each pair of taps interleaved byte by
 * byte, widened to 16 bits, one multiply-add by the two weights; a last odd tap is paired with
 * zeros. The same sums as the scalar loop. */
__attribute__((target("sse4.1"))) static void row_down_sse41(iw_resampler *r, uint32_t o) {
    const size_t n = (size_t)r->out_w * r->channels;
    const iw_axis *a = &r->down;
    const uint32_t taps = a->taps;
    if (r->in_h == r->out_h || taps > 64) {
        row_down_scalar(r, o);
        return;
    }
    const uint8_t *rows[64];
    for (uint32_t k = 0; k < taps; k++) rows[k] = r->ring + (size_t)((a->first[o] + k) % taps) * n;
    const int16_t *w = a->weights + (size_t)o * taps;
    const int32_t half = (int32_t)1 << (a->bits - 1);
    const __m128i zero = _mm_setzero_si128(), halves = _mm_set1_epi32(half);
    uint8_t *out = r->output + (size_t)o * n;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i s0 = halves, s1 = halves, s2 = halves, s3 = halves;
        for (uint32_t k = 0; k < taps; k += 2) {
            const __m128i x = _mm_loadu_si128((const __m128i *)(rows[k] + i));
            const __m128i y = k + 1 < taps ? _mm_loadu_si128((const __m128i *)(rows[k + 1] + i)) : zero;
            const __m128i pw = _mm_set1_epi32(k + 1 < taps ? weight_pair(w + k) : (int32_t)(uint16_t)w[k]);
            const __m128i lo = _mm_unpacklo_epi8(x, y), hi = _mm_unpackhi_epi8(x, y);
            s0 = _mm_add_epi32(s0, _mm_madd_epi16(_mm_unpacklo_epi8(lo, zero), pw));
            s1 = _mm_add_epi32(s1, _mm_madd_epi16(_mm_unpackhi_epi8(lo, zero), pw));
            s2 = _mm_add_epi32(s2, _mm_madd_epi16(_mm_unpacklo_epi8(hi, zero), pw));
            s3 = _mm_add_epi32(s3, _mm_madd_epi16(_mm_unpackhi_epi8(hi, zero), pw));
        }
        s0 = _mm_srai_epi32(s0, a->bits), s1 = _mm_srai_epi32(s1, a->bits);
        s2 = _mm_srai_epi32(s2, a->bits), s3 = _mm_srai_epi32(s3, a->bits);
        _mm_storeu_si128((__m128i *)(out + i), _mm_packus_epi16(_mm_packs_epi32(s0, s1), _mm_packs_epi32(s2, s3)));
    }
    for (; i < n; i++) {
        int32_t s = half;
        for (uint32_t k = 0; k < taps; k++) s += rows[k][i] * w[k];
        out[i] = clamp_byte(s, a->bits);
    }
}
#endif

/* Colour is resampled weighted by alpha (premultiplied, as Pillow and libvips do): otherwise the
 * colour under transparent pixels (often black, or anything) would bleed into the edges of what
 * shows.
 * An opaque row is its own premultiplied form, so only rows with a pixel not opaque are
 * multiplied, and only output pixels not opaque are divided back. */
static int row_opaque(const uint8_t *row, uint32_t w) {
    uint32_t all = 0xFFFFFFFFu;
    for (uint32_t i = 0; i < w; i++) {
        uint32_t pixel;
        memcpy(&pixel, row + (size_t)i * 4, 4);
        all &= pixel;
    }
    uint8_t bytes[4];
    memcpy(bytes, &all, 4);
    return bytes[3] == 0xFF;
}

static void premultiply(const uint8_t *in, uint8_t *out, uint32_t w) {
    for (size_t i = 0; i < (size_t)w * 4; i += 4) {
        const uint32_t a = in[i + 3];
        for (int c = 0; c < 3; c++) {
            const uint32_t t = in[i + c] * a + 128;
            out[i + c] = (uint8_t)((t + (t >> 8)) >> 8); /* in * a / 255, rounded */
        }
        out[i + 3] = (uint8_t)a;
    }
}

static void unpremultiply(uint8_t *row, uint32_t w) {
    for (size_t i = 0; i < (size_t)w * 4; i += 4) {
        const uint32_t a = row[i + 3];
        if (a == 255) continue;
        for (int c = 0; c < 3; c++) {
            const uint32_t v = a ? (row[i + c] * 255u + a / 2) / a : 0;
            row[i + c] = (uint8_t)(v > 255 ? 255 : v);
        }
    }
}

static void row_across(const iw_resampler *r, const uint8_t *in, uint8_t *out) {
#ifdef IW_RESAMPLE_X86
    if (r->sse41) {
        row_across_sse41(r, in, out);
        return;
    }
#endif
    row_across_scalar(r, in, out);
}

static void row_down(iw_resampler *r, uint32_t o) {
#ifdef IW_RESAMPLE_X86
    if (r->sse41) {
        row_down_sse41(r, o);
        return;
    }
#endif
    row_down_scalar(r, o);
}

iw_resampler *iw_resampler_new(uint32_t in_w, uint32_t in_h, uint32_t out_w, uint32_t out_h, int channels, uint8_t *output) {
    if (!in_w || !in_h || !out_w || !out_h || (channels != 1 && channels != 3 && channels != 4)) return NULL;
    iw_resampler *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->in_w = in_w, r->in_h = in_h, r->out_w = out_w, r->out_h = out_h, r->channels = channels;
#ifdef IW_RESAMPLE_X86
    r->sse41 = __builtin_cpu_supports("sse4.1");
#endif
    const size_t n = (size_t)out_w * channels;
    if (axis_make(&r->across, in_w, out_w) != 0 || axis_make(&r->down, in_h, out_h) != 0) goto fail;
    r->ring = malloc(n * r->down.taps);
    r->sums = malloc(sizeof(int32_t) * n);
    r->converted = malloc((size_t)in_w * channels);
    if (output) {
        r->output = output;
    } else {
        r->output = malloc(n * out_h);
        r->owns_output = 1;
    }
    if (!r->ring || !r->sums || !r->converted || !r->output) goto fail;
    return r;
fail:
    iw_resampler_free(r);
    return NULL;
}

void iw_resampler_free(iw_resampler *r) {
    if (!r) return;
    axis_free(&r->across);
    axis_free(&r->down);
    free(r->ring);
    free(r->sums);
    free(r->converted);
    if (r->owns_output) free(r->output);
    free(r);
}

void iw_resampler_push(iw_resampler *r, const uint8_t *row) {
    if (r->next_in >= r->in_h) return;
    const uint32_t y = r->next_in++;
    const size_t n = (size_t)r->out_w * r->channels;
    if (r->channels == 4 && !row_opaque(row, r->in_w)) {
        premultiply(row, r->converted, r->in_w);
        row = r->converted;
        r->premultiplied = 1;
    }
    row_across(r, row, r->ring + (size_t)(y % r->down.taps) * n);
    const iw_axis *a = &r->down;
    while (r->next_out < r->out_h) {
        const uint32_t o = r->next_out;
        const uint32_t last = a->first[o] + a->taps - 1;
        if (last > y) break;
        row_down(r, o);
        /* (Rows made before the first row with transparency came from opaque rows only.) */
        if (r->premultiplied) unpremultiply(r->output + (size_t)o * n, r->out_w);
        r->next_out++;
    }
}

void iw_resampler_push_rgba(iw_resampler *r, const uint8_t *rgba) {
    if (r->channels == 4) {
        iw_resampler_push(r, rgba);
        return;
    }
    iw_convert_pixels(rgba, 4, r->converted, r->channels, r->in_w);
    iw_resampler_push(r, r->converted);
}

uint32_t iw_resampler_completed_rows(const iw_resampler *r) { return r->next_out; }

uint8_t *iw_resampler_output(iw_resampler *r) { return r->output; }

static int resize(const uint8_t *input, uint32_t in_w, uint32_t in_h, int channels, uint8_t *output, uint32_t out_w, uint32_t out_h,
                  int vectors) {
    iw_resampler *r = iw_resampler_new(in_w, in_h, out_w, out_h, channels, output);
    if (!r) return -1;
    if (!vectors) r->sse41 = 0;
    const size_t stride = (size_t)in_w * channels;
    for (uint32_t y = 0; y < in_h; y++) iw_resampler_push(r, input + y * stride);
    iw_resampler_free(r);
    return 0;
}

int iw_resize(const uint8_t *input, uint32_t in_w, uint32_t in_h, int channels, uint8_t *output, uint32_t out_w, uint32_t out_h) {
    return resize(input, in_w, in_h, channels, output, out_w, out_h, 1);
}

int iw_resize_portable(const uint8_t *input, uint32_t in_w, uint32_t in_h, int channels, uint8_t *output, uint32_t out_w, uint32_t out_h) {
    return resize(input, in_w, in_h, channels, output, out_w, out_h, 0);
}
