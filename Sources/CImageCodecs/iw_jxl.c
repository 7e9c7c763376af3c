/* JPEG XL with libjxl (iw_jxl.h). */
#include "iw_jxl.h"
#include "iw_limits.h"
#include <jxl/decode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct iw_jxl {
    JxlDecoder *dec;
    iw_layout layout;
    int channels;
    uint64_t max_pixels;
    int manage_color;
    /* Bytes fed and not yet consumed by libjxl (it reads from our buffer in place). */
    uint8_t *in;
    size_t in_length, in_capacity;
    uint32_t width, height;
    int orientation, animated, xyb, gray;
    uint8_t *pixels;
    size_t size;
    int has_pixels, passes, complete, want_partial;
    size_t consumed_since_flush;
    uint8_t *icc;
    size_t icc_length;
    int error_kind;
    char error[256];
};

static int fail(struct iw_jxl *d, int kind, const char *message) {
    if (!d->error_kind) {
        d->error_kind = kind;
        snprintf(d->error, sizeof d->error, "%s", message);
    }
    return IW_FAILED;
}

iw_jxl *iw_jxl_create(iw_layout layout, uint64_t max_pixels, int manage_color) {
    struct iw_jxl *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->dec = JxlDecoderCreate(NULL);
    if (!d->dec) {
        free(d);
        return NULL;
    }
    d->layout = layout;
    d->channels = layout == IW_RGBA ? 4 : 3;
    d->max_pixels = max_pixels;
    d->manage_color = manage_color;
    d->orientation = 1;
    d->want_partial = 1;
    /* One thread (decodes run one per core already); the stored pixels, orientation reported. */
    if (JxlDecoderSubscribeEvents(d->dec, JXL_DEC_BASIC_INFO | JXL_DEC_COLOR_ENCODING | JXL_DEC_FRAME_PROGRESSION |
                                              JXL_DEC_FULL_IMAGE) != JXL_DEC_SUCCESS ||
        JxlDecoderSetKeepOrientation(d->dec, JXL_TRUE) != JXL_DEC_SUCCESS ||
        JxlDecoderSetUnpremultiplyAlpha(d->dec, JXL_TRUE) != JXL_DEC_SUCCESS ||
        JxlDecoderSetProgressiveDetail(d->dec, kPasses) != JXL_DEC_SUCCESS) {
        iw_jxl_destroy(d);
        return NULL;
    }
    return d;
}

void iw_jxl_destroy(iw_jxl *d) {
    if (!d) return;
    JxlDecoderDestroy(d->dec);
    free(d->in);
    free(d->pixels);
    free(d->icc);
    free(d);
}

void iw_jxl_want_partial_frames(iw_jxl *d, int wanted) { d->want_partial = wanted; }

static int basic_info(struct iw_jxl *d) {
    JxlBasicInfo info;
    if (JxlDecoderGetBasicInfo(d->dec, &info) != JXL_DEC_SUCCESS) return fail(d, IW_ERR_CORRUPT, "cannot read the JPEG XL header");
    d->width = info.xsize;
    d->height = info.ysize;
    d->orientation = info.orientation >= 1 && info.orientation <= 8 ? (int)info.orientation : 1;
    d->animated = info.have_animation ? 1 : 0;
    char message[IW_LIMIT_MESSAGE_SIZE];
    if (d->width == 0 || d->height == 0) return fail(d, IW_ERR_CORRUPT, "image has 0 pixels");
    if (iw_over_pixel_limit(d->width, d->height, d->max_pixels, message)) return fail(d, IW_ERR_LIMIT, message);
    d->xyb = !info.uses_original_profile;
    d->gray = info.num_color_channels == 1;
    return 0;
}

static int color_encoding(struct iw_jxl *d) {
    if (d->manage_color && d->xyb) {
        /* XYB: libjxl renders it in whatever space is asked (once the colour information is in);
         * sRGB, as the other formats end up. */
        JxlColorEncoding srgb;
        memset(&srgb, 0, sizeof srgb);
        srgb.color_space = d->gray ? JXL_COLOR_SPACE_GRAY : JXL_COLOR_SPACE_RGB;
        srgb.white_point = JXL_WHITE_POINT_D65;
        srgb.primaries = JXL_PRIMARIES_SRGB;
        srgb.transfer_function = JXL_TRANSFER_FUNCTION_SRGB;
        srgb.rendering_intent = JXL_RENDERING_INTENT_PERCEPTUAL;
        JxlDecoderSetPreferredColorProfile(d->dec, &srgb);
    }
    JxlPixelFormat format = {(uint32_t)d->channels, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
    size_t size = 0;
    if (JxlDecoderGetICCProfileSize(d->dec, &format, JXL_COLOR_PROFILE_TARGET_DATA, &size) != JXL_DEC_SUCCESS || size == 0) return 0;
    uint8_t *icc = malloc(size);
    if (!icc) return fail(d, IW_ERR_MEMORY, "out of memory for the colour profile");
    if (JxlDecoderGetColorAsICCProfile(d->dec, &format, JXL_COLOR_PROFILE_TARGET_DATA, icc, size) != JXL_DEC_SUCCESS) {
        free(icc);
        return 0;
    }
    free(d->icc);
    d->icc = icc;
    d->icc_length = size;
    return 0;
}

static int out_buffer(struct iw_jxl *d) {
    JxlPixelFormat format = {(uint32_t)d->channels, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
    size_t size = 0;
    if (JxlDecoderImageOutBufferSize(d->dec, &format, &size) != JXL_DEC_SUCCESS ||
        size != (size_t)d->width * d->height * (size_t)d->channels)
        return fail(d, IW_ERR_CORRUPT, "the JPEG XL frame's size differs from the image's");
    if (!d->pixels) {
        d->pixels = calloc(size ? size : 1, 1);
        if (!d->pixels) return fail(d, IW_ERR_MEMORY, "out of memory for the pixel buffer");
        d->size = size;
    }
    if (JxlDecoderSetImageOutBuffer(d->dec, &format, d->pixels, size) != JXL_DEC_SUCCESS)
        return fail(d, IW_ERR_CORRUPT, "cannot decode the JPEG XL frame");
    return 0;
}

int iw_jxl_feed(iw_jxl *d, const uint8_t *data, size_t length, int last) {
    if (d->error_kind) return IW_FAILED;
    if (d->complete) return 0; /* bytes after the first frame are not needed */
    if (length > 0) {
        if (d->in_length + length > d->in_capacity) {
            size_t capacity = d->in_capacity ? d->in_capacity : 65536;
            while (capacity < d->in_length + length) capacity *= 2;
            uint8_t *grown = realloc(d->in, capacity);
            if (!grown) return fail(d, IW_ERR_MEMORY, "out of memory for the input buffer");
            d->in = grown;
            d->in_capacity = capacity;
        }
        memcpy(d->in + d->in_length, data, length);
        d->in_length += length;
    }
    if (d->in_length == 0 && !last) return 0;
    static const uint8_t nothing = 0;
    if (JxlDecoderSetInput(d->dec, d->in_length ? d->in : &nothing, d->in_length) != JXL_DEC_SUCCESS)
        return fail(d, IW_ERR_CORRUPT, "cannot read the JPEG XL data");
    /* (Input is never closed: libjxl then says NEED_MORE_INPUT where the bytes end too soon, which
     * tells a truncated file from a corrupt one.) */
    int result = 0;
    for (;;) {
        JxlDecoderStatus status = JxlDecoderProcessInput(d->dec);
        if (status == JXL_DEC_ERROR) {
            result = fail(d, IW_ERR_CORRUPT, "corrupt JPEG XL data");
            break;
        }
        if (status == JXL_DEC_NEED_MORE_INPUT) {
            if (last) {
                result = fail(d, IW_ERR_TRUNCATED, "the JPEG XL data ends before the image does");
                break;
            }
            /* A sequential file's groups so far, at most once per 32 KiB fed. */
            if (d->pixels && d->want_partial && d->consumed_since_flush >= 32768 && JxlDecoderFlushImage(d->dec) == JXL_DEC_SUCCESS) {
                d->has_pixels = 1;
                d->consumed_since_flush = 0;
                result |= IW_PIXELS;
            }
            break;
        }
        if (status == JXL_DEC_BASIC_INFO) {
            if (basic_info(d) != 0) {
                result = IW_FAILED;
                break;
            }
            result |= IW_HEADER;
        } else if (status == JXL_DEC_COLOR_ENCODING) {
            if (color_encoding(d) != 0) {
                result = IW_FAILED;
                break;
            }
        } else if (status == JXL_DEC_NEED_IMAGE_OUT_BUFFER) {
            if (out_buffer(d) != 0) {
                result = IW_FAILED;
                break;
            }
        } else if (status == JXL_DEC_FRAME_PROGRESSION) {
            if (d->want_partial && JxlDecoderFlushImage(d->dec) == JXL_DEC_SUCCESS) {
                d->has_pixels = 1;
                d->passes++;
                d->consumed_since_flush = 0;
                result |= IW_PIXELS;
            }
        } else if (status == JXL_DEC_FULL_IMAGE || status == JXL_DEC_SUCCESS) {
            if (!d->pixels) {
                result = fail(d, IW_ERR_CORRUPT, "the JPEG XL file has no image");
                break;
            }
            d->has_pixels = 1;
            d->complete = 1;
            result |= IW_PIXELS | IW_COMPLETE;
            break;
        }
    }
    size_t remaining = JxlDecoderReleaseInput(d->dec);
    if (remaining <= d->in_length) {
        d->consumed_since_flush += d->in_length - remaining;
        memmove(d->in, d->in + (d->in_length - remaining), remaining);
        d->in_length = remaining;
    }
    if (d->complete) {
        free(d->in);
        d->in = NULL;
        d->in_length = d->in_capacity = 0;
    }
    return result;
}

int iw_jxl_error_kind(const iw_jxl *d) { return d->error_kind; }
const char *iw_jxl_error(const iw_jxl *d) { return d->error; }
uint32_t iw_jxl_width(const iw_jxl *d) { return d->width; }
uint32_t iw_jxl_height(const iw_jxl *d) { return d->height; }
int iw_jxl_channels(const iw_jxl *d) { return d->channels; }
int iw_jxl_orientation(const iw_jxl *d) { return d->orientation; }
int iw_jxl_animated(const iw_jxl *d) { return d->animated; }
const uint8_t *iw_jxl_pixels(const iw_jxl *d) { return d->has_pixels ? d->pixels : NULL; }
int iw_jxl_passes(const iw_jxl *d) { return d->passes; }

const uint8_t *iw_jxl_icc(const iw_jxl *d, size_t *length) {
    *length = d->icc_length;
    return d->icc;
}

int iw_jxl_signature(const uint8_t *data, size_t length) {
    JxlSignature signature = JxlSignatureCheck(data, length);
    return signature == JXL_SIG_CODESTREAM || signature == JXL_SIG_CONTAINER;
}

int iw_jxl_probe(const uint8_t *data, size_t length, uint32_t *width, uint32_t *height, int *orientation) {
    *width = *height = 0;
    *orientation = 1;
    JxlDecoder *dec = JxlDecoderCreate(NULL);
    if (!dec) return IW_FAILED;
    int status = IW_FAILED;
    if (JxlDecoderSubscribeEvents(dec, JXL_DEC_BASIC_INFO) == JXL_DEC_SUCCESS && JxlDecoderSetKeepOrientation(dec, JXL_TRUE) == JXL_DEC_SUCCESS &&
        JxlDecoderSetInput(dec, data, length) == JXL_DEC_SUCCESS) {
        JxlDecoderCloseInput(dec);
        JxlBasicInfo info;
        if (JxlDecoderProcessInput(dec) == JXL_DEC_BASIC_INFO && JxlDecoderGetBasicInfo(dec, &info) == JXL_DEC_SUCCESS && info.xsize > 0 &&
            info.ysize > 0) {
            *width = info.xsize;
            *height = info.ysize;
            *orientation = info.orientation >= 1 && info.orientation <= 8 ? (int)info.orientation : 1;
            status = 0;
        }
    }
    JxlDecoderDestroy(dec);
    return status;
}
