/* Colour management with Little CMS (iw_color.h): transforms to sRGB, made once per profile and
 * pixel kind and cached for the life of the process (a bounded number; past it, transforms are
 * made for one use). lcms2 reports errors by return values; its log handler is silenced. */
#include "iw_color.h"
#include <lcms2.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* An RGB matrix/curve profile (most of them: Display P3, Adobe RGB, ProPhoto, ColorMatch…) to sRGB
 * without lcms2's per-pixel pipeline, which runs at some 50-80 Mpixel/s here: each channel's curve
 * as a table (8-bit value -> linear light), the 3x3 matrix from the profile's colorants to sRGB's
 * (both D50-adapted, as ICC profiles store them: what lcms2 computes for a matrix/curve pair), then
 * sRGB's curve as a table of 2^14 linear steps. AVX2 does 8 pixels at once (the tables read by
 * gathers); elsewhere the matrix is folded into nine integer tables. The same values as lcms2's
 * transform within a level or two (ColorManagementTests holds it to that). */
enum { OUT_STEPS = 16384 };
struct matrix_shaper {
    float in[3][256];
    float m[9]; /* scaled by OUT_STEPS - 1 */
    int32_t folded[3][3][256]; /* m[o][c] * in[c][v] in 1/(OUT_STEPS - 1) steps, times 2^8 */
    uint8_t out[OUT_STEPS + 4]; /* (+4: a gather reads 4 bytes at the last index) */
    int avx2;
};

struct iw_color_transform {
    cmsHTRANSFORM lcms; /* NULL: `shaper`, or a gray profile applied as `lut` to each colour channel */
    struct matrix_shaper *shaper;
    uint8_t lut[256];
    int channels;  /* the output layout's */
    int set_alpha; /* CMYK to RGBA: lcms2 writes R, G and B; alpha is opaque */
    int cached;
};

enum { CACHE_SIZE = 32 };

/* One cached answer: the key (the profile's bytes or the primaries' numbers, the source kind, the
 * layout) and the transform, NULL when the answer was "nothing to do". */
struct entry {
    uint64_t hash;
    uint8_t *key;
    size_t length;
    int source, layout;
    iw_color_transform *transform;
};

static struct entry cache[CACHE_SIZE];
static int cache_count;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void quiet(cmsContext context, cmsUInt32Number code, const char *text) {
    (void)context;
    (void)code;
    (void)text;
}

static void setup(void) { cmsSetLogErrorHandler(quiet); }

static uint64_t fnv1a(const uint8_t *bytes, size_t length) {
    uint64_t hash = 1469598103934665603ULL;
    for (size_t i = 0; i < length; i++) hash = (hash ^ bytes[i]) * 1099511628211ULL;
    return hash;
}

static int channels_of(iw_layout layout) { return layout == IW_RGBA ? 4 : layout == IW_RGB ? 3 : 1; }

/* The sRGB curve as lcms2's parametric type 4. */
static cmsToneCurve *srgb_curve(void) {
    const cmsFloat64Number params[5] = {2.4, 1.0 / 1.055, 0.055 / 1.055, 1.0 / 12.92, 0.04045};
    return cmsBuildParametricToneCurve(NULL, 4, params);
}

/* Gray with sRGB's curve and white: where a gray profile's values go. */
static cmsHPROFILE srgb_gray(void) {
    cmsToneCurve *curve = srgb_curve();
    if (!curve) return NULL;
    cmsHPROFILE profile = cmsCreateGrayProfile(cmsD50_xyY(), curve);
    cmsFreeToneCurve(curve);
    return profile;
}

static int near(double a, double b, double tolerance) { return fabs(a - b) <= tolerance; }

/* An RGB matrix/curve profile with sRGB's colorants (D50-adapted, as ICC profiles store them) and
 * curve, and no lookup tables that would take precedence. */
static int is_srgb(cmsHPROFILE profile) {
    if (cmsGetColorSpace(profile) != cmsSigRgbData || !cmsIsMatrixShaper(profile)) return 0;
    if (cmsIsTag(profile, cmsSigAToB0Tag) || cmsIsTag(profile, cmsSigAToB1Tag)) return 0;
    static const double colorants[3][3] = {{0.4361, 0.2225, 0.0139}, {0.3851, 0.7169, 0.0971}, {0.1431, 0.0606, 0.7141}};
    const cmsTagSignature xyz[3] = {cmsSigRedColorantTag, cmsSigGreenColorantTag, cmsSigBlueColorantTag};
    const cmsTagSignature trc[3] = {cmsSigRedTRCTag, cmsSigGreenTRCTag, cmsSigBlueTRCTag};
    cmsToneCurve *reference = srgb_curve();
    if (!reference) return 0;
    int same = 1;
    for (int c = 0; c < 3 && same; c++) {
        const cmsCIEXYZ *v = cmsReadTag(profile, xyz[c]);
        const cmsToneCurve *curve = cmsReadTag(profile, trc[c]);
        if (!v || !curve) {
            same = 0;
            break;
        }
        same = near(v->X, colorants[c][0], 0.003) && near(v->Y, colorants[c][1], 0.003) && near(v->Z, colorants[c][2], 0.003);
        for (int i = 1; i < 16 && same; i++) {
            float x = (float)i / 16.0f;
            same = near(cmsEvalToneCurveFloat(curve, x), cmsEvalToneCurveFloat(reference, x), 0.002);
        }
    }
    cmsFreeToneCurve(reference);
    return same;
}

static iw_color_transform *made(cmsHTRANSFORM lcms, iw_layout layout, int set_alpha) {
    if (!lcms) return NULL;
    iw_color_transform *t = calloc(1, sizeof *t);
    if (!t) {
        cmsDeleteTransform(lcms);
        return NULL;
    }
    t->lcms = lcms;
    t->channels = channels_of(layout);
    t->set_alpha = set_alpha;
    return t;
}

/* A gray profile's 256 values through to sRGB gray; NULL when that changes nothing. */
static iw_color_transform *gray_lut(cmsHPROFILE profile, iw_layout layout) {
    cmsHPROFILE out = srgb_gray();
    if (!out) return NULL;
    cmsHTRANSFORM lcms = cmsCreateTransform(profile, TYPE_GRAY_8, out, TYPE_GRAY_8, INTENT_PERCEPTUAL, cmsFLAGS_NOCACHE);
    cmsCloseProfile(out);
    if (!lcms) return NULL;
    uint8_t values[256], lut[256];
    for (int i = 0; i < 256; i++) values[i] = (uint8_t)i;
    cmsDoTransform(lcms, values, lut, 256);
    cmsDeleteTransform(lcms);
    int identity = 1;
    for (int i = 0; i < 256 && identity; i++) identity = abs(lut[i] - i) <= 1;
    if (identity) return NULL;
    iw_color_transform *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    memcpy(t->lut, lut, sizeof lut);
    t->channels = channels_of(layout);
    return t;
}

/* The 3x3 matrix whose columns are a profile's red, green and blue colorants; 0 when one is missing. */
static int colorants(cmsHPROFILE profile, double m[9]) {
    const cmsTagSignature tags[3] = {cmsSigRedColorantTag, cmsSigGreenColorantTag, cmsSigBlueColorantTag};
    for (int c = 0; c < 3; c++) {
        const cmsCIEXYZ *v = cmsReadTag(profile, tags[c]);
        if (!v) return 0;
        m[c] = v->X;
        m[3 + c] = v->Y;
        m[6 + c] = v->Z;
    }
    return 1;
}

static int invert3(const double a[9], double out[9]) {
    double det = a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6]) + a[2] * (a[3] * a[7] - a[4] * a[6]);
    if (fabs(det) < 1e-12) return 0;
    out[0] = (a[4] * a[8] - a[5] * a[7]) / det;
    out[1] = (a[2] * a[7] - a[1] * a[8]) / det;
    out[2] = (a[1] * a[5] - a[2] * a[4]) / det;
    out[3] = (a[5] * a[6] - a[3] * a[8]) / det;
    out[4] = (a[0] * a[8] - a[2] * a[6]) / det;
    out[5] = (a[2] * a[3] - a[0] * a[5]) / det;
    out[6] = (a[3] * a[7] - a[4] * a[6]) / det;
    out[7] = (a[1] * a[6] - a[0] * a[7]) / det;
    out[8] = (a[0] * a[4] - a[1] * a[3]) / det;
    return 1;
}

/* The matrix/curve path for an RGB profile without lookup tables; NULL for any other. */
static struct matrix_shaper *matrix_shaper_for(cmsHPROFILE profile) {
    if (!cmsIsMatrixShaper(profile) || cmsIsTag(profile, cmsSigAToB0Tag) || cmsIsTag(profile, cmsSigAToB1Tag) ||
        cmsIsTag(profile, cmsSigAToB2Tag))
        return NULL;
    cmsHPROFILE srgb = cmsCreate_sRGBProfile();
    if (!srgb) return NULL;
    double source[9], target[9], inverse[9];
    int ok = colorants(profile, source) && colorants(srgb, target) && invert3(target, inverse);
    cmsCloseProfile(srgb);
    const cmsTagSignature trc[3] = {cmsSigRedTRCTag, cmsSigGreenTRCTag, cmsSigBlueTRCTag};
    struct matrix_shaper *s = ok ? calloc(1, sizeof *s) : NULL;
    if (!s) return NULL;
    for (int c = 0; c < 3; c++) {
        const cmsToneCurve *curve = cmsReadTag(profile, trc[c]);
        if (!curve) {
            free(s);
            return NULL;
        }
        for (int v = 0; v < 256; v++) s->in[c][v] = cmsEvalToneCurveFloat(curve, (float)v / 255.0f);
    }
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
            double m = inverse[r * 3] * source[c] + inverse[r * 3 + 1] * source[3 + c] + inverse[r * 3 + 2] * source[6 + c];
            s->m[r * 3 + c] = (float)(m * (OUT_STEPS - 1));
            for (int v = 0; v < 256; v++) s->folded[r][c][v] = (int32_t)lrint(m * s->in[c][v] * (OUT_STEPS - 1) * 256.0);
        }
    for (int i = 0; i < OUT_STEPS; i++) {
        double linear = (double)i / (OUT_STEPS - 1);
        double encoded = linear <= 0.0031308 ? linear * 12.92 : 1.055 * pow(linear, 1.0 / 2.4) - 0.055;
        s->out[i] = (uint8_t)lround(encoded * 255.0);
    }
#if defined(__x86_64__)
    __builtin_cpu_init();
    s->avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return s;
}

static inline uint8_t encoded(const struct matrix_shaper *s, int32_t folded) {
    int32_t k = (folded + 128) >> 8;
    return s->out[k < 0 ? 0 : k > OUT_STEPS - 1 ? OUT_STEPS - 1 : k];
}

static void shaper_portable(const struct matrix_shaper *s, const uint8_t *in, uint8_t *out, size_t count, int channels) {
    for (size_t i = 0; i < count; i++, in += channels, out += channels) {
        unsigned r = in[0], g = in[1], b = in[2];
        int32_t x = s->folded[0][0][r] + s->folded[0][1][g] + s->folded[0][2][b];
        int32_t y = s->folded[1][0][r] + s->folded[1][1][g] + s->folded[1][2][b];
        int32_t z = s->folded[2][0][r] + s->folded[2][1][g] + s->folded[2][2][b];
        out[0] = encoded(s, x);
        out[1] = encoded(s, y);
        out[2] = encoded(s, z);
        if (channels == 4) out[3] = in[3];
    }
}

#if defined(__x86_64__)
/* 8 pixels' R, G and B (each in the low byte of a 32-bit lane) to their sRGB values, in the low 3
 * bytes of each lane. */
__attribute__((target("avx2,fma"))) static inline __m256i shaper8(const struct matrix_shaper *s, __m256i px) {
    const __m256i byte = _mm256_set1_epi32(0xFF);
    const __m256 half = _mm256_set1_ps(0.5f), zero = _mm256_setzero_ps(), top = _mm256_set1_ps(OUT_STEPS - 1);
    __m256 r = _mm256_i32gather_ps(s->in[0], _mm256_and_si256(px, byte), 4);
    __m256 g = _mm256_i32gather_ps(s->in[1], _mm256_and_si256(_mm256_srli_epi32(px, 8), byte), 4);
    __m256 b = _mm256_i32gather_ps(s->in[2], _mm256_and_si256(_mm256_srli_epi32(px, 16), byte), 4);
    __m256i result = _mm256_setzero_si256();
    for (int o = 0; o < 3; o++) {
        __m256 v = _mm256_fmadd_ps(_mm256_set1_ps(s->m[o * 3]), r,
                                   _mm256_fmadd_ps(_mm256_set1_ps(s->m[o * 3 + 1]), g, _mm256_fmadd_ps(_mm256_set1_ps(s->m[o * 3 + 2]), b, half)));
        __m256i k = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(v, zero), top));
        __m256i value = _mm256_and_si256(_mm256_i32gather_epi32((const int *)s->out, k, 1), byte);
        result = _mm256_or_si256(result, _mm256_slli_epi32(value, 8 * o));
    }
    return result;
}

__attribute__((target("avx2,fma"))) static size_t shaper_avx2_rgba(const struct matrix_shaper *s, const uint8_t *in, uint8_t *out, size_t count) {
    const __m256i alpha = _mm256_set1_epi32((int)0xFF000000u);
    size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        __m256i px = _mm256_loadu_si256((const __m256i *)(in + 4 * i));
        _mm256_storeu_si256((__m256i *)(out + 4 * i), _mm256_or_si256(shaper8(s, px), _mm256_and_si256(px, alpha)));
    }
    return i;
}

/* RGB: 8 pixels' 24 bytes spread into 32-bit lanes by shuffles (a 32-byte load: never past the
 * pixels, the loop stops 11 short of the end), and packed back into exactly 24 bytes. */
__attribute__((target("avx2,fma"))) static size_t shaper_avx2_rgb(const struct matrix_shaper *s, const uint8_t *in, uint8_t *out, size_t count) {
    const __m256i spread_dwords = _mm256_setr_epi32(0, 1, 2, 3, 3, 4, 5, 6);
    const __m256i spread = _mm256_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1, 0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9,
                                            10, 11, -1);
    const __m256i pack = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1, 0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14,
                                          -1, -1, -1, -1);
    const __m256i pack_dwords = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 7, 7);
    size_t i = 0;
    for (; i + 11 <= count; i += 8) {
        __m256i bytes = _mm256_loadu_si256((const __m256i *)(in + 3 * i));
        __m256i px = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(bytes, spread_dwords), spread);
        __m256i rgb = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(shaper8(s, px), pack), pack_dwords);
        _mm_storeu_si128((__m128i *)(out + 3 * i), _mm256_castsi256_si128(rgb));
        _mm_storel_epi64((__m128i *)(out + 3 * i + 16), _mm256_extracti128_si256(rgb, 1));
    }
    return i;
}
#endif

static void shaper_convert(const struct matrix_shaper *s, const uint8_t *in, uint8_t *out, size_t count, int channels, int portable) {
    size_t done = 0;
#if defined(__x86_64__)
    if (s->avx2 && !portable) done = channels == 4 ? shaper_avx2_rgba(s, in, out, count) : shaper_avx2_rgb(s, in, out, count);
#endif
    shaper_portable(s, in + done * (size_t)channels, out + done * (size_t)channels, count - done, channels);
}

/* From `profile` (owned by the caller) for `source` pixels into `layout`. */
static iw_color_transform *transform_from(cmsHPROFILE profile, iw_color_source source, iw_layout layout) {
    cmsColorSpaceSignature space = cmsGetColorSpace(profile);
    if (source == IW_COLOR_FROM_PIXELS && space == cmsSigGrayData) return gray_lut(profile, layout);
    if (source == IW_COLOR_FROM_PIXELS && (space != cmsSigRgbData || layout == IW_GRAY || is_srgb(profile))) return NULL;
    if (source != IW_COLOR_FROM_PIXELS && space != cmsSigCmykData) return NULL;
    if (source == IW_COLOR_FROM_PIXELS) {
        struct matrix_shaper *shaper = matrix_shaper_for(profile);
        iw_color_transform *t = shaper ? calloc(1, sizeof *t) : NULL;
        if (t) {
            t->shaper = shaper;
            t->channels = channels_of(layout);
            return t;
        }
        free(shaper);
    }
    cmsHPROFILE out = layout == IW_GRAY ? srgb_gray() : cmsCreate_sRGBProfile();
    if (!out) return NULL;
    cmsUInt32Number out_format = layout == IW_RGBA ? TYPE_RGBA_8 : layout == IW_RGB ? TYPE_RGB_8 : TYPE_GRAY_8;
    cmsUInt32Number in_format = source == IW_COLOR_FROM_CMYK ? TYPE_CMYK_8 : source == IW_COLOR_FROM_CMYK_INVERTED ? TYPE_CMYK_8_REV : out_format;
    cmsUInt32Number flags = cmsFLAGS_NOCACHE | (source == IW_COLOR_FROM_PIXELS && layout == IW_RGBA ? cmsFLAGS_COPY_ALPHA : 0);
    cmsHTRANSFORM lcms = cmsCreateTransform(profile, in_format, out, out_format, INTENT_PERCEPTUAL, flags);
    cmsCloseProfile(out);
    return made(lcms, layout, source != IW_COLOR_FROM_PIXELS && layout == IW_RGBA);
}

/* The cached answer for a key, or `make`'s (cached when there is room). */
static iw_color_transform *lookup(const uint8_t *key, size_t length, int source, iw_layout layout,
                                  iw_color_transform *(*make)(const uint8_t *, size_t, iw_color_source, iw_layout)) {
    pthread_once(&once, setup);
    uint64_t hash = fnv1a(key, length);
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < cache_count; i++) {
        struct entry *e = &cache[i];
        if (e->hash == hash && e->length == length && e->source == source && e->layout == (int)layout && memcmp(e->key, key, length) == 0) {
            iw_color_transform *found = e->transform;
            pthread_mutex_unlock(&cache_lock);
            return found;
        }
    }
    pthread_mutex_unlock(&cache_lock);
    /* Made outside the lock (a CMYK profile's transform takes milliseconds); two threads may make
     * the same one, and the second is used once and freed. */
    iw_color_transform *t = make(key, length, (iw_color_source)source, layout);
    pthread_mutex_lock(&cache_lock);
    if (cache_count < CACHE_SIZE) {
        uint8_t *copy = malloc(length ? length : 1);
        if (copy) {
            memcpy(copy, key, length);
            cache[cache_count++] = (struct entry){hash, copy, length, source, (int)layout, t};
            if (t) t->cached = 1;
        }
    }
    pthread_mutex_unlock(&cache_lock);
    return t;
}

static iw_color_transform *make_from_icc(const uint8_t *icc, size_t length, iw_color_source source, iw_layout layout) {
    cmsHPROFILE profile = cmsOpenProfileFromMem(icc, (cmsUInt32Number)length);
    if (!profile) return NULL;
    iw_color_transform *t = transform_from(profile, source, layout);
    cmsCloseProfile(profile);
    return t;
}

iw_color_transform *iw_color_from_icc(const uint8_t *icc, size_t length, iw_color_source source, iw_layout layout) {
    if (!icc || length < 128 || length > UINT32_MAX) return NULL;
    return lookup(icc, length, source, layout, make_from_icc);
}

/* The key of a primaries transform: 8 chromaticities and the gamma. */
struct primaries_key {
    double xy[8];
    double gamma;
};

static iw_color_transform *make_from_primaries(const uint8_t *bytes, size_t length, iw_color_source source, iw_layout layout) {
    (void)length;
    (void)source;
    struct primaries_key key;
    memcpy(&key, bytes, sizeof key);
    if (layout == IW_GRAY) return NULL;
    for (int i = 0; i < 8; i++)
        if (!(key.xy[i] > 0 && key.xy[i] < 1)) return NULL;
    static const double srgb[8] = {0.64, 0.33, 0.30, 0.60, 0.15, 0.06, 0.3127, 0.3290};
    int same = key.gamma == 0 || near(key.gamma, 2.2, 0.01);
    for (int i = 0; i < 8 && same; i++) same = near(key.xy[i], srgb[i], 0.0015);
    if (same) return NULL;
    cmsCIExyY white = {key.xy[6], key.xy[7], 1.0};
    cmsCIExyYTRIPLE primaries = {{key.xy[0], key.xy[1], 1.0}, {key.xy[2], key.xy[3], 1.0}, {key.xy[4], key.xy[5], 1.0}};
    cmsToneCurve *curve = key.gamma > 0 ? cmsBuildGamma(NULL, key.gamma) : srgb_curve();
    if (!curve) return NULL;
    cmsToneCurve *curves[3] = {curve, curve, curve};
    cmsHPROFILE profile = cmsCreateRGBProfile(&white, &primaries, curves);
    cmsFreeToneCurve(curve);
    if (!profile) return NULL;
    iw_color_transform *t = transform_from(profile, IW_COLOR_FROM_PIXELS, layout);
    cmsCloseProfile(profile);
    return t;
}

iw_color_transform *iw_color_from_primaries(const double xy[8], double gamma, iw_layout layout) {
    struct primaries_key key;
    memset(&key, 0, sizeof key);
    memcpy(key.xy, xy, sizeof key.xy);
    key.gamma = gamma;
    return lookup((const uint8_t *)&key, sizeof key, IW_COLOR_FROM_PIXELS + 16, layout, make_from_primaries);
}

iw_color_transform *iw_color_from_cicp(unsigned primaries, unsigned transfer, iw_layout layout) {
    static const double bt709[8] = {0.64, 0.33, 0.30, 0.60, 0.15, 0.06, 0.3127, 0.3290};
    static const double bt470m[8] = {0.67, 0.33, 0.21, 0.71, 0.14, 0.08, 0.310, 0.316};
    static const double bt470bg[8] = {0.64, 0.33, 0.29, 0.60, 0.15, 0.06, 0.3127, 0.3290};
    static const double smpte170[8] = {0.630, 0.340, 0.310, 0.595, 0.155, 0.070, 0.3127, 0.3290};
    static const double bt2020[8] = {0.708, 0.292, 0.170, 0.797, 0.131, 0.046, 0.3127, 0.3290};
    static const double dci_p3[8] = {0.680, 0.320, 0.265, 0.690, 0.150, 0.060, 0.314, 0.351};
    static const double display_p3[8] = {0.680, 0.320, 0.265, 0.690, 0.150, 0.060, 0.3127, 0.3290};
    static const double ebu3213[8] = {0.630, 0.340, 0.295, 0.605, 0.155, 0.077, 0.3127, 0.3290};
    const double *xy;
    switch (primaries) {
    case 1: case 2: xy = bt709; break; /* BT.709 (sRGB's), unspecified */
    case 4: xy = bt470m; break;
    case 5: xy = bt470bg; break;
    case 6: case 7: xy = smpte170; break;
    case 9: xy = bt2020; break;
    case 11: xy = dci_p3; break;
    case 12: xy = display_p3; break;
    case 22: xy = ebu3213; break;
    default: return NULL;
    }
    double gamma;
    switch (transfer) {
    case 1: case 2: case 6: case 13: case 14: case 15: gamma = 0; break; /* BT.709 family and sRGB: the sRGB curve */
    case 4: gamma = 2.2; break;
    case 5: gamma = 2.8; break;
    case 8: gamma = 1.0; break;
    default: return NULL; /* PQ, HLG and the rest: not converted */
    }
    return iw_color_from_primaries(xy, gamma, layout);
}

void iw_color_convert(const iw_color_transform *t, const uint8_t *in, uint8_t *out, size_t count) {
    iw_color_convert_portable(t, in, out, count, 0);
}

void iw_color_convert_portable(const iw_color_transform *t, const uint8_t *in, uint8_t *out, size_t count, int portable) {
    if (!t) return;
    if (t->shaper) {
        shaper_convert(t->shaper, in, out, count, t->channels, portable);
        return;
    }
    if (t->lcms) {
        /* lcms2 counts pixels in 32 bits. */
        const size_t step = (size_t)1 << 30;
        size_t in_size = (size_t)T_BYTES(cmsGetTransformInputFormat(t->lcms)) * (T_CHANNELS(cmsGetTransformInputFormat(t->lcms)) + T_EXTRA(cmsGetTransformInputFormat(t->lcms)));
        for (size_t done = 0; done < count; done += step) {
            size_t n = count - done < step ? count - done : step;
            cmsDoTransform(t->lcms, in + done * in_size, out + done * (size_t)t->channels, (cmsUInt32Number)n);
        }
        if (t->set_alpha)
            for (size_t i = 0; i < count; i++) out[i * 4 + 3] = 255;
        return;
    }
    int colours = t->channels == 4 ? 3 : t->channels;
    for (size_t i = 0; i < count; i++) {
        const uint8_t *p = in + i * (size_t)t->channels;
        uint8_t *q = out + i * (size_t)t->channels;
        for (int c = 0; c < colours; c++) q[c] = t->lut[p[c]];
        if (t->channels == 4) q[3] = p[3];
    }
}

void iw_color_release(iw_color_transform *t) {
    if (!t || t->cached) return;
    if (t->lcms) cmsDeleteTransform(t->lcms);
    free(t->shaper);
    free(t);
}
