/* Where a JPEG decode's time goes, for the pipeline benchmark: over every .jpg of a directory, on
 * one thread from memory, the CPU time of
 *   full     TurboJPEG to RGBA at full size (what the from-memory ceiling does),
 *   entropy  libjpeg reading the coefficients only (jpeg_read_coefficients: Huffman decoding, no
 *            IDCT, upsampling or colour conversion), the part no DCT scale makes smaller,
 *   scaled   TurboJPEG to RGB at the DCT scale the worker takes for a SIZE-pixel thumbnail (the
 *            smallest of 1/8, 1/4, 1/2 that still covers SIZE on the long side),
 * baseline and progressive files apart; best of three rounds after one that leaves out the files
 * TurboJPEG refuses. Prints one JSON line per kind.
 *
 *   jpeg_phases DIR [SIZE]     (SIZE: 256)
 *
 * Build: cc -O2 -o jpeg_phases jpeg_phases.c -lturbojpeg -ljpeg
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jpeglib.h>
#include <turbojpeg.h>

struct file {
    unsigned char *data;
    unsigned long length;
    int progressive;
    int unreadable;
};

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A progressive file has a SOF2 marker (0xFFC2) before its first scan. */
static int is_progressive(const unsigned char *p, unsigned long n) {
    for (unsigned long i = 2; i + 3 < n;) {
        if (p[i] != 0xFF) return 0;
        unsigned char m = p[i + 1];
        if (m == 0xC2 || m == 0xC6 || m == 0xCA || m == 0xCE) return 1;
        if (m == 0xDA) return 0;
        i += 2 + ((unsigned long)p[i + 2] << 8 | p[i + 3]);
    }
    return 0;
}

struct quiet_error {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
};

static void quiet_exit(j_common_ptr cinfo) { longjmp(((struct quiet_error *)cinfo->err)->jump, 1); }
static void quiet_message(j_common_ptr cinfo, int level) { (void)cinfo; (void)level; }

static void read_coefficients(const struct file *f) {
    struct jpeg_decompress_struct cinfo;
    struct quiet_error err;
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = quiet_exit;
    err.pub.emit_message = quiet_message;
    jpeg_create_decompress(&cinfo);
    if (setjmp(err.jump) == 0) {
        jpeg_mem_src(&cinfo, f->data, f->length);
        jpeg_read_header(&cinfo, TRUE);
        jpeg_read_coefficients(&cinfo);
    }
    jpeg_destroy_decompress(&cinfo);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: jpeg_phases DIR [SIZE]\n");
        return 2;
    }
    int size = argc > 2 ? atoi(argv[2]) : 256;
    DIR *dir = opendir(argv[1]);
    if (!dir) {
        perror(argv[1]);
        return 1;
    }
    struct file *files = NULL;
    size_t count = 0, capacity = 0;
    struct dirent *entry;
    char path[4096];
    while ((entry = readdir(dir))) {
        size_t len = strlen(entry->d_name);
        if (len < 4 || strcmp(entry->d_name + len - 4, ".jpg") != 0) continue;
        snprintf(path, sizeof path, "%s/%s", argv[1], entry->d_name);
        FILE *fp = fopen(path, "rb");
        if (!fp) continue;
        fseek(fp, 0, SEEK_END);
        long n = ftell(fp);
        rewind(fp);
        unsigned char *data = n > 0 ? malloc((size_t)n) : NULL;
        if (!data || fread(data, 1, (size_t)n, fp) != (size_t)n) {
            free(data);
            fclose(fp);
            continue;
        }
        fclose(fp);
        if (count == capacity && !(files = realloc(files, (capacity = capacity ? capacity * 2 : 256) * sizeof *files))) {
            perror("realloc");
            return 1;
        }
        files[count++] = (struct file){data, (unsigned long)n, is_progressive(data, (unsigned long)n), 0};
    }
    closedir(dir);
    size_t out_size = 0;
    unsigned char *out = NULL;
    /* phase 0: full, 1: entropy, 2: scaled; [kind]: 0 baseline, 1 progressive */
    double best[3][2] = {{1e30, 1e30}, {1e30, 1e30}, {1e30, 1e30}};
    int files_of[2] = {0, 0}; /* those TurboJPEG decodes without an error (not 12-bit ones, say) */
    for (int round = 0; round < 4; round++) { /* round 0 sorts the files out, unmeasured */
        double spent[3][2] = {{0}};
        for (size_t i = 0; i < count; i++) {
            struct file *f = &files[i];
            if (f->unreadable) continue;
            /* A handle per file, as the worker takes: TurboJPEG 2.1 can refuse every later file on
             * a handle that failed one. */
            tjhandle tj = tjInitDecompress();
            int width, height, subsampling, colorspace;
            if (!tj || tjDecompressHeader3(tj, f->data, f->length, &width, &height, &subsampling, &colorspace) != 0) {
                f->unreadable = 1;
                if (tj) tjDestroy(tj);
                continue;
            }
            size_t need = (size_t)width * height * 4;
            if (need > out_size && !(out = realloc(out, out_size = need))) {
                perror("realloc");
                return 1;
            }
            int denom = 1;
            while (denom < 8) {
                int next = denom * 2;
                int long_side = width > height ? width : height;
                if ((long_side + next - 1) / next < size) break;
                denom = next;
            }
            double t0 = cpu_now();
            int failed = tjDecompress2(tj, f->data, f->length, out, width, 0, height, TJPF_RGBA, 0) != 0 && tjGetErrorCode(tj) != TJERR_WARNING;
            double t1 = cpu_now();
            read_coefficients(f);
            double t2 = cpu_now();
            failed |= tjDecompress2(tj, f->data, f->length, out, (width + denom - 1) / denom, 0, (height + denom - 1) / denom, TJPF_RGB, 0) != 0 &&
                      tjGetErrorCode(tj) != TJERR_WARNING;
            double t3 = cpu_now();
            tjDestroy(tj);
            if (round == 0) {
                if (failed) f->unreadable = 1;
                else files_of[f->progressive]++;
                continue;
            }
            spent[0][f->progressive] += t1 - t0;
            spent[1][f->progressive] += t2 - t1;
            spent[2][f->progressive] += t3 - t2;
        }
        for (int p = 0; round > 0 && p < 3; p++)
            for (int k = 0; k < 2; k++)
                if (spent[p][k] < best[p][k]) best[p][k] = spent[p][k];
    }
    const char *kinds[2] = {"baseline", "progressive"};
    for (int k = 0; k < 2; k++)
        printf("{\"kind\": \"%s\", \"files\": %d, \"full_s\": %.6f, \"entropy_s\": %.6f, \"scaled_s\": %.6f, \"size\": %d}\n", kinds[k],
               files_of[k], best[0][k], best[1][k], best[2][k], size);
    return 0;
}
