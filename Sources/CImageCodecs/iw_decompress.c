/* Whole-buffer gzip (libdeflate), Zstandard (libzstd) and Brotli (libbrotlidec) decompression
 * (iw_decompress.h). */
#include "iw_decompress.h"
#include <brotli/decode.h>
#include <libdeflate.h>
#include <zstd.h>

int iw_gunzip(const uint8_t *in, size_t in_size, uint8_t *out, size_t out_size) {
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    if (!d) return -1;
    int result = -1;
    if (in_size >= 2 && in[0] == 0x1f && in[1] == 0x8b) {
        /* Members one after another, each expanding into what is left of `out`. */
        size_t read = 0, written = 0;
        while (read < in_size) {
            size_t used = 0, made = 0;
            if (libdeflate_gzip_decompress_ex(d, in + read, in_size - read, out + written, out_size - written, &used, &made)
                != LIBDEFLATE_SUCCESS || used == 0)
                goto done;
            read += used;
            written += made;
        }
        result = written == out_size ? 0 : -1;
    } else {
        size_t made = 0;
        result = libdeflate_zlib_decompress(d, in, in_size, out, out_size, &made) == LIBDEFLATE_SUCCESS && made == out_size ? 0 : -1;
    }
done:
    libdeflate_free_decompressor(d);
    return result;
}

int iw_unzstd(const uint8_t *in, size_t in_size, uint8_t *out, size_t out_size) {
    size_t made = ZSTD_decompress(out, out_size, in, in_size);
    return !ZSTD_isError(made) && made == out_size ? 0 : -1;
}

int iw_unbrotli(const uint8_t *in, size_t in_size, uint8_t *out, size_t out_size) {
    size_t made = out_size;
    /* A stream that would make more than out_size bytes fails (no room), as one that makes fewer. */
    return BrotliDecoderDecompress(in_size, in, &made, out) == BROTLI_DECODER_RESULT_SUCCESS && made == out_size ? 0 : -1;
}
