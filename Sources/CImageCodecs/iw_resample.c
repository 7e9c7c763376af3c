#include "iw_resample.h"
#include "iw_pixels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <immintrin.h>
#define IW_RESAMPLE_X86 1
#endif

/* Weights of 22 bits: a sum of 255 * (1 << 22) plus the rounding half still fits an int32. */
#define IW_RESAMPLE_BITS 22
#define IW_RESAMPLE_ONE (1 << IW_RESAMPLE_BITS)
#define IW_RESAMPLE_HALF (1 << (IW_RESAMPLE_BITS - 1))

/* One axis: output pixel o covers input pixels first[o] .. first[o] + count[o] - 1 with
 * weights[o * span + k]. */
typedef struct {
    uint32_t *first;
    uint32_t *count;
    int32_t *weights;
    uint32_t span; /* the largest count */
} iw_axis;

struct iw_resampler {
    uint32_t in_w, in_h, out_w, out_h;
    int channels;
    iw_axis across, down;
    uint8_t *ring;      /* the last `down.span` input rows, resampled across (out_w * channels each) */
    int32_t *sums;      /* one output row being summed */
    uint8_t *converted; /* push_rgba's row in the resampler's channels */
    uint8_t *output;
    int owns_output;
    int sse41; /* the CPU has SSE4.1: rows go through the vector versions (the same sums) */
    uint32_t next_in, next_out;
};

static void axis_free(iw_axis *a) {
    free(a->first);
    free(a->count);
    free(a->weights);
}

/* The overlap of each output pixel's footprint [o * scale, (o + 1) * scale) with each input pixel,
 * over the footprint's length, rounded to integers that sum to exactly IW_RESAMPLE_ONE (the
 * rounding remainder goes to the largest weight). */
static int axis_make(iw_axis *a, uint32_t in, uint32_t out) {
    memset(a, 0, sizeof *a);
    const double scale = (double)in / (double)out;
    a->span = (uint32_t)ceil(scale) + 1;
    if (a->span > in) a->span = in;
    a->first = malloc(sizeof(uint32_t) * out);
    a->count = malloc(sizeof(uint32_t) * out);
    a->weights = malloc(sizeof(int32_t) * (size_t)out * a->span);
    if (!a->first || !a->count || !a->weights) {
        axis_free(a);
        return -1;
    }
    for (uint32_t o = 0; o < out; o++) {
        const double start = o * scale, end = start + scale;
        uint32_t first = (uint32_t)start;
        if (first > in - 1) first = in - 1;
        double last_f = floor(end - 1e-9);
        uint32_t last = last_f < 0 ? 0 : (uint32_t)last_f;
        if (last > in - 1) last = in - 1;
        if (last < first) last = first;
        uint32_t count = last - first + 1;
        if (count > a->span) count = a->span;
        int32_t *w = a->weights + (size_t)o * a->span;
        int64_t total = 0;
        uint32_t largest = 0;
        for (uint32_t k = 0; k < count; k++) {
            const double lo = start > first + k ? start : (double)(first + k);
            const double hi = end < first + k + 1 ? end : (double)(first + k + 1);
            const double overlap = hi > lo ? hi - lo : 0;
            w[k] = (int32_t)lrint(overlap / scale * IW_RESAMPLE_ONE);
            total += w[k];
            if (w[k] > w[largest]) largest = k;
        }
        w[largest] += (int32_t)(IW_RESAMPLE_ONE - total);
        a->first[o] = first;
        a->count[o] = count;
    }
    return 0;
}

static inline uint8_t clamp_byte(int32_t sum) {
    sum >>= IW_RESAMPLE_BITS;
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
    for (uint32_t o = 0; o < r->out_w; o++) {
        const uint8_t *p = in + (size_t)a->first[o] * c;
        const int32_t *w = a->weights + (size_t)o * a->span;
        const uint32_t n = a->count[o];
        uint8_t *q = out + (size_t)o * c;
        if (c == 4) {
            int32_t s0 = IW_RESAMPLE_HALF, s1 = IW_RESAMPLE_HALF, s2 = IW_RESAMPLE_HALF, s3 = IW_RESAMPLE_HALF;
            for (uint32_t k = 0; k < n; k++, p += 4) {
                s0 += p[0] * w[k];
                s1 += p[1] * w[k];
                s2 += p[2] * w[k];
                s3 += p[3] * w[k];
            }
            q[0] = clamp_byte(s0), q[1] = clamp_byte(s1), q[2] = clamp_byte(s2), q[3] = clamp_byte(s3);
        } else if (c == 3) {
            int32_t s0 = IW_RESAMPLE_HALF, s1 = IW_RESAMPLE_HALF, s2 = IW_RESAMPLE_HALF;
            for (uint32_t k = 0; k < n; k++, p += 3) {
                s0 += p[0] * w[k];
                s1 += p[1] * w[k];
                s2 += p[2] * w[k];
            }
            q[0] = clamp_byte(s0), q[1] = clamp_byte(s1), q[2] = clamp_byte(s2);
        } else {
            for (int ch = 0; ch < c; ch++) {
                int32_t s = IW_RESAMPLE_HALF;
                for (uint32_t k = 0; k < n; k++) s += p[(size_t)k * c + ch] * w[k];
                q[ch] = clamp_byte(s);
            }
        }
    }
}

/* Output row o down from the ring, whose rows first[o] .. first[o] + count[o] - 1 are all there.
 * Inlined into a baseline and an SSE4.1 function, which the compiler vectorizes each its way. */
static inline __attribute__((always_inline)) void row_down_body(iw_resampler *r, uint32_t o) {
    const size_t n = (size_t)r->out_w * r->channels;
    uint8_t *out = r->output + (size_t)o * n;
    const iw_axis *a = &r->down;
    const uint32_t span = a->span;
    if (r->in_h == r->out_h) {
        memcpy(out, r->ring + (size_t)(o % span) * n, n);
        return;
    }
    const int32_t *w = a->weights + (size_t)o * span;
    int32_t *sums = r->sums;
    const uint8_t *row = r->ring + (size_t)(a->first[o] % span) * n;
    for (size_t i = 0; i < n; i++) sums[i] = IW_RESAMPLE_HALF + row[i] * w[0];
    for (uint32_t k = 1; k < a->count[o]; k++) {
        row = r->ring + (size_t)((a->first[o] + k) % span) * n;
        const int32_t wk = w[k];
        for (size_t i = 0; i < n; i++) sums[i] += row[i] * wk;
    }
    for (size_t i = 0; i < n; i++) out[i] = clamp_byte(sums[i]);
}

static void row_down_scalar(iw_resampler *r, uint32_t o) { row_down_body(r, o); }

#ifdef IW_RESAMPLE_X86
__attribute__((target("sse4.1"))) static void row_down_sse41(iw_resampler *r, uint32_t o) { row_down_body(r, o); }

/* One lane per channel: a pixel's 3 or 4 bytes widened to 32 bits, times the tap's weight, summed
 * exactly as the scalar loop sums them, then shifted and saturated to bytes as clamp_byte does. */
__attribute__((target("sse4.1"))) static void row_across_sse41(const iw_resampler *r, const uint8_t *in, uint8_t *out) {
    const int c = r->channels;
    if (r->in_w == r->out_w || (c != 3 && c != 4)) {
        row_across_scalar(r, in, out);
        return;
    }
    const iw_axis *a = &r->across;
    const __m128i half = _mm_set1_epi32(IW_RESAMPLE_HALF);
    /* A 3-channel pixel is read as 4 bytes, so the row's last input pixel is read on its own. */
    const uint32_t wide_end = c == 4 ? r->in_w : r->in_w - 1;
    for (uint32_t o = 0; o < r->out_w; o++) {
        const uint32_t first = a->first[o], n = a->count[o];
        const int32_t *w = a->weights + (size_t)o * a->span;
        const uint8_t *p = in + (size_t)first * c;
        __m128i acc = half;
        uint32_t k = 0;
        for (; k < n && first + k < wide_end; k++, p += c) {
            int32_t v;
            memcpy(&v, p, 4);
            const __m128i px = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(v));
            acc = _mm_add_epi32(acc, _mm_mullo_epi32(px, _mm_set1_epi32(w[k])));
        }
        for (; k < n; k++, p += c) {
            const __m128i px = _mm_setr_epi32(p[0], p[1], p[2], 0);
            acc = _mm_add_epi32(acc, _mm_mullo_epi32(px, _mm_set1_epi32(w[k])));
        }
        acc = _mm_srai_epi32(acc, IW_RESAMPLE_BITS);
        const __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(acc, acc), acc);
        const int32_t packed = _mm_cvtsi128_si32(bytes);
        if (c == 4) {
            memcpy(out + (size_t)o * 4, &packed, 4);
        } else {
            memcpy(out + (size_t)o * 3, &packed, 3);
        }
    }
}
#endif

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
    if (in_h == out_h) r->down.span = 1;
    r->ring = malloc(n * r->down.span);
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
    row_across(r, row, r->ring + (size_t)(y % r->down.span) * n);
    const iw_axis *a = &r->down;
    while (r->next_out < r->out_h) {
        const uint32_t o = r->next_out;
        const uint32_t last = r->in_h == r->out_h ? o : a->first[o] + a->count[o] - 1;
        if (last > y) break;
        row_down(r, o);
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
