/* libwebp decode-throughput harness, from memory to packed RGB or RGBA, the loop dwebp runs for one
 * file (WebPGetFeatures, then WebPDecode with a WebPDecoderConfig), the counterpart of
 * ../shared/bench/tjdec.c and pngdec.c for `image-worker-bench decode`.
 *
 *   webpdec [-t THREADS] [-s SECONDS] [-w WARMUP] [-alloc] FILE.webp...
 *       each thread loops the decode of the file for SECONDS; prints one JSON line per file:
 *       total Mpixels/s over all threads. Output is RGBA when the file has alpha, else RGB.
 *       -alloc: libwebp allocates the output per decode (as dwebp does); default reuses one
 *       buffer of the caller's.
 *
 * Build: cc -O2 -o webpdec webpdec.c -lwebp -lpthread
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <webp/decode.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static unsigned char *readfile(const char *p, size_t *n) {
    FILE *f = fopen(p, "rb");
    if (!f) { perror(p); exit(1); }
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n);
    if (fread(b, 1, *n, f) != *n) { perror("read"); exit(1); }
    fclose(f);
    return b;
}

typedef struct {
    const unsigned char *data;
    size_t n;
    double seconds, warmup;
    int alloc;
    long iters;
    double t0, t1;
    int w, h;
} job_t;

static pthread_barrier_t barrier;

static int decode_once(const unsigned char *data, size_t n, unsigned char **buf, int alloc, int *pw, int *ph) {
    WebPDecoderConfig config;
    if (!WebPInitDecoderConfig(&config)) return -1;
    if (WebPGetFeatures(data, n, &config.input) != VP8_STATUS_OK) { fprintf(stderr, "not a WebP\n"); return -1; }
    int w = config.input.width, h = config.input.height, channels = config.input.has_alpha ? 4 : 3;
    config.output.colorspace = channels == 4 ? MODE_RGBA : MODE_RGB;
    if (!alloc) {
        if (!*buf) *buf = malloc((size_t)w * h * channels);
        config.output.is_external_memory = 1;
        config.output.u.RGBA.rgba = *buf;
        config.output.u.RGBA.stride = w * channels;
        config.output.u.RGBA.size = (size_t)w * h * channels;
    }
    if (WebPDecode(data, n, &config) != VP8_STATUS_OK) { fprintf(stderr, "decode failed\n"); return -1; }
    WebPFreeDecBuffer(&config.output);
    *pw = w;
    *ph = h;
    return 0;
}

static void *worker(void *arg) {
    job_t *j = arg;
    unsigned char *buf = NULL;
    double end = now() + j->warmup;
    while (now() < end) decode_once(j->data, j->n, &buf, j->alloc, &j->w, &j->h);
    pthread_barrier_wait(&barrier);
    j->t0 = now();
    end = j->t0 + j->seconds;
    j->iters = 0;
    do {
        if (decode_once(j->data, j->n, &buf, j->alloc, &j->w, &j->h)) exit(2);
        j->iters++;
    } while (now() < end);
    j->t1 = now();
    free(buf);
    return NULL;
}

int main(int argc, char **argv) {
    int threads = 1, alloc = 0;
    double seconds = 2.0, warmup = 0.3;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "-t")) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s")) seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "-w")) warmup = atof(argv[++i]);
        else if (!strcmp(argv[i], "-alloc")) alloc = 1;
        else { fprintf(stderr, "bad option %s\n", argv[i]); return 1; }
    }
    for (; i < argc; i++) {
        size_t n;
        unsigned char *data = readfile(argv[i], &n);
        job_t *jobs = calloc((size_t)threads, sizeof *jobs);
        pthread_t *ids = calloc((size_t)threads, sizeof *ids);
        pthread_barrier_init(&barrier, NULL, (unsigned)threads);
        for (int t = 0; t < threads; t++) {
            jobs[t] = (job_t){.data = data, .n = n, .seconds = seconds, .warmup = warmup, .alloc = alloc};
            pthread_create(&ids[t], NULL, worker, &jobs[t]);
        }
        double mpix = 0;
        for (int t = 0; t < threads; t++) {
            pthread_join(ids[t], NULL);
            mpix += jobs[t].iters * (double)jobs[t].w * jobs[t].h / 1e6 / (jobs[t].t1 - jobs[t].t0);
        }
        pthread_barrier_destroy(&barrier);
        printf("{\"file\": \"%s\", \"threads\": %d, \"alloc\": %d, \"mpix_s\": %.2f}\n", argv[i], threads, alloc, mpix);
        free(jobs);
        free(ids);
        free(data);
    }
    return 0;
}
