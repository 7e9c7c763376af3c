/* WebP with libwebp: header and limits, whole and incremental decoding (WebPIDecoder), an
 * animation's first frame (the demuxer), and encoding. libwebp returns status codes: nothing
 * longjmps here. */
#include "iw_webp.h"
#include "iw_limits.h"
#include "iw_pixels.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <webp/decode.h>
#include <webp/demux.h>
#include <webp/encode.h>

static int status_kind(VP8StatusCode status) {
    switch (status) {
    case VP8_STATUS_OUT_OF_MEMORY: return IW_ERR_MEMORY;
    case VP8_STATUS_UNSUPPORTED_FEATURE: return IW_ERR_UNSUPPORTED;
    case VP8_STATUS_NOT_ENOUGH_DATA:
    case VP8_STATUS_SUSPENDED: return IW_ERR_TRUNCATED;
    default: return IW_ERR_CORRUPT;
    }
}

static const char *status_text(VP8StatusCode status) {
    switch (status) {
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED:
    case VP8_STATUS_NOT_ENOUGH_DATA: return "the data ends before the image does";
    case VP8_STATUS_USER_ABORT: return "aborted";
    default: return "error";
    }
}

static int fail_status(iw_image *out, VP8StatusCode status) { return iw_image_fail(out, status_kind(status), status_text(status)); }

int iw_webp_header(const uint8_t *data, size_t length, int complete, uint64_t max_pixels, uint32_t max_frames,
                   iw_webp_info *info, iw_image *out) {
    memset(info, 0, sizeof *info);
    memset(out, 0, sizeof *out);
    WebPBitstreamFeatures features;
    VP8StatusCode status = WebPGetFeatures(data, length, &features);
    if (status == VP8_STATUS_NOT_ENOUGH_DATA && !complete) return 1;
    if (status != VP8_STATUS_OK) return fail_status(out, status);
    if (features.width <= 0 || features.height <= 0) return iw_image_fail(out, IW_ERR_CORRUPT, "image has 0 pixels");
    info->width = out->image_width = (uint32_t)features.width;
    info->height = out->image_height = (uint32_t)features.height;
    info->has_alpha = features.has_alpha;
    info->animated = features.has_animation;
    info->lossless = features.format == 2;
    info->frame_count = 1;
    char message[IW_LIMIT_MESSAGE_SIZE];
    if (iw_over_pixel_limit(info->width, info->height, max_pixels, message)) return iw_image_fail(out, IW_ERR_LIMIT, message);
    if (info->animated && complete) {
        WebPData whole = {data, length};
        WebPDemuxer *demux = WebPDemux(&whole);
        if (!demux) return iw_image_fail(out, IW_ERR_CORRUPT, "the animation's chunks cannot be read");
        info->frame_count = WebPDemuxGetI(demux, WEBP_FF_FRAME_COUNT);
        info->loop_count = WebPDemuxGetI(demux, WEBP_FF_LOOP_COUNT);
        WebPDemuxDelete(demux);
        if (info->frame_count == 0) return iw_image_fail(out, IW_ERR_CORRUPT, "animation without frames");
        if (max_frames && info->frame_count > max_frames) {
            snprintf(out->error, sizeof out->error, "animation of %u frames exceeds the limit of %u frames", info->frame_count, max_frames);
            out->error_kind = IW_ERR_LIMIT;
            return IW_FAILED;
        }
    }
    return 0;
}

/* A decoder configuration writing into the caller's buffer. */
static void external_output(WebPDecoderConfig *config, int channels, uint32_t width, uint32_t height, uint8_t *pixels,
                            size_t stride) {
    config->output.colorspace = channels == 4 ? MODE_RGBA : MODE_RGB;
    config->output.is_external_memory = 1;
    config->output.u.RGBA.rgba = pixels;
    config->output.u.RGBA.stride = (int)stride;
    config->output.u.RGBA.size = stride * (height - 1) + (size_t)width * (size_t)channels;
}

static void scaling(WebPDecoderConfig *config, const uint8_t *data, size_t length, uint32_t width, uint32_t height) {
    WebPBitstreamFeatures features;
    if (WebPGetFeatures(data, length, &features) != VP8_STATUS_OK) return;
    if ((uint32_t)features.width != width || (uint32_t)features.height != height) {
        config->options.use_scaling = 1;
        config->options.scaled_width = (int)width;
        config->options.scaled_height = (int)height;
    }
}

int iw_webp_decode_into(const uint8_t *data, size_t length, int channels, uint32_t width, uint32_t height, uint8_t *pixels,
                        iw_image *out) {
    WebPDecoderConfig config;
    if (!WebPInitDecoderConfig(&config)) return iw_image_fail(out, IW_ERR_MEMORY, "libwebp version mismatch");
    external_output(&config, channels, width, height, pixels, (size_t)width * (size_t)channels);
    scaling(&config, data, length, width, height);
    VP8StatusCode status = WebPDecode(data, length, &config);
    WebPFreeDecBuffer(&config.output);
    if (status != VP8_STATUS_OK) return fail_status(out, status);
    out->width = width;
    out->height = height;
    out->channels = channels;
    return 0;
}

int iw_webp_first_frame_into(const uint8_t *data, size_t length, uint8_t *pixels, iw_image *out) {
    WebPData whole = {data, length};
    WebPDemuxer *demux = WebPDemux(&whole);
    if (!demux) return iw_image_fail(out, IW_ERR_CORRUPT, "the animation's chunks cannot be read");
    uint32_t canvas_width = WebPDemuxGetI(demux, WEBP_FF_CANVAS_WIDTH);
    uint32_t canvas_height = WebPDemuxGetI(demux, WEBP_FF_CANVAS_HEIGHT);
    WebPIterator frame;
    if (!WebPDemuxGetFrame(demux, 1, &frame)) {
        WebPDemuxDelete(demux);
        return iw_image_fail(out, IW_ERR_CORRUPT, "animation without frames");
    }
    int result = 0;
    if (frame.width <= 0 || frame.height <= 0 || frame.x_offset < 0 || frame.y_offset < 0 ||
        (uint64_t)frame.x_offset + (uint64_t)frame.width > canvas_width ||
        (uint64_t)frame.y_offset + (uint64_t)frame.height > canvas_height) {
        result = iw_image_fail(out, IW_ERR_CORRUPT, "the first frame lies outside the canvas");
    } else {
        size_t stride = (size_t)canvas_width * 4;
        memset(pixels, 0, stride * canvas_height);
        WebPDecoderConfig config;
        WebPInitDecoderConfig(&config);
        uint8_t *origin = pixels + (size_t)frame.y_offset * stride + (size_t)frame.x_offset * 4;
        external_output(&config, 4, (uint32_t)frame.width, (uint32_t)frame.height, origin, stride);
        /* The fragment must be of the frame's size: the demuxer says so, the bitstream must agree. */
        WebPBitstreamFeatures features;
        VP8StatusCode status = WebPGetFeatures(frame.fragment.bytes, frame.fragment.size, &features);
        if (status == VP8_STATUS_OK && (features.width != frame.width || features.height != frame.height)) {
            result = iw_image_fail(out, IW_ERR_CORRUPT, "the first frame's size differs from its header");
        } else {
            if (status == VP8_STATUS_OK) status = WebPDecode(frame.fragment.bytes, frame.fragment.size, &config);
            WebPFreeDecBuffer(&config.output);
            if (status != VP8_STATUS_OK) result = fail_status(out, status);
        }
    }
    WebPDemuxReleaseIterator(&frame);
    WebPDemuxDelete(demux);
    if (result == 0) {
        out->width = canvas_width;
        out->height = canvas_height;
        out->channels = 4;
    }
    return result;
}

struct iw_webp_inc {
    WebPDecoderConfig config; /* the decoder keeps a pointer to its options */
    WebPIDecoder *idec;
    uint32_t width, height;
    int error_kind;
    char error[256];
    int complete;
};

iw_webp_inc *iw_webp_inc_create(int channels, uint32_t width, uint32_t height, uint8_t *pixels) {
    iw_webp_inc *dec = calloc(1, sizeof *dec);
    if (!dec) return NULL;
    if (!WebPInitDecoderConfig(&dec->config)) {
        free(dec);
        return NULL;
    }
    dec->width = width;
    dec->height = height;
    external_output(&dec->config, channels, width, height, pixels, (size_t)width * (size_t)channels);
    return dec;
}

int iw_webp_inc_append(iw_webp_inc *dec, const uint8_t *data, size_t length) {
    if (dec->error_kind) return IW_FAILED;
    if (dec->complete) return 1;
    if (!dec->idec) {
        /* Created with the first bytes, which carry the header: the scale is set from it. */
        scaling(&dec->config, data, length, dec->width, dec->height);
        dec->idec = WebPIDecode(NULL, 0, &dec->config);
        if (!dec->idec) {
            dec->error_kind = IW_ERR_MEMORY;
            snprintf(dec->error, sizeof dec->error, "cannot start the WebP decoder");
            return IW_FAILED;
        }
    }
    if (length == 0) return 0;
    VP8StatusCode status = WebPIAppend(dec->idec, data, length);
    if (status == VP8_STATUS_OK) {
        dec->complete = 1;
        return 1;
    }
    if (status == VP8_STATUS_SUSPENDED) return 0;
    dec->error_kind = status_kind(status);
    snprintf(dec->error, sizeof dec->error, "%s", status_text(status));
    return IW_FAILED;
}

uint32_t iw_webp_inc_rows(const iw_webp_inc *dec) {
    if (dec->complete) return dec->height;
    if (!dec->idec) return 0;
    int last_y = 0, width = 0, height = 0, stride = 0;
    if (!WebPIDecGetRGB(dec->idec, &last_y, &width, &height, &stride) || last_y < 0) return 0;
    return (uint32_t)last_y > dec->height ? dec->height : (uint32_t)last_y;
}

int iw_webp_inc_error_kind(const iw_webp_inc *dec) { return dec->error_kind; }
const char *iw_webp_inc_error(const iw_webp_inc *dec) { return dec->error; }

void iw_webp_inc_destroy(iw_webp_inc *dec) {
    if (!dec) return;
    if (dec->idec) WebPIDelete(dec->idec);
    WebPFreeDecBuffer(&dec->config.output);
    free(dec);
}

int iw_webp_encode(const uint8_t *pixels, uint32_t width, uint32_t height, int channels, size_t stride, int quality, int lossless,
                   uint8_t **bytes, size_t *length, char error[256]) {
    *bytes = NULL;
    *length = 0;
    if (width == 0 || height == 0 || width > WEBP_MAX_DIMENSION || height > WEBP_MAX_DIMENSION) {
        snprintf(error, 256, "WebP holds at most %dx%d pixels, not %ux%u", WEBP_MAX_DIMENSION, WEBP_MAX_DIMENSION, width, height);
        return IW_FAILED;
    }
    WebPConfig config;
    WebPPicture picture;
    if (!WebPConfigInit(&config) || !WebPPictureInit(&picture)) {
        snprintf(error, 256, "libwebp version mismatch");
        return IW_FAILED;
    }
    config.lossless = lossless ? 1 : 0;
    config.quality = (float)(quality < 0 ? 0 : quality > 100 ? 100 : quality);
    picture.use_argb = lossless ? 1 : 0;
    picture.width = (int)width;
    picture.height = (int)height;
    /* Grey becomes RGB; RGBA whose every alpha is 255 goes in as RGB, so no alpha is written. */
    int opaque = 1;
    if (channels == 4) {
        for (uint32_t y = 0; y < height && opaque; y++) {
            const uint8_t *row = pixels + (size_t)y * stride;
            for (uint32_t x = 0; x < width; x++)
                if (row[x * 4 + 3] != 255) {
                    opaque = 0;
                    break;
                }
        }
    }
    uint8_t *converted = NULL;
    const uint8_t *source = pixels;
    size_t source_stride = stride;
    int source_channels = channels;
    if (channels == 1 || (channels == 4 && opaque)) {
        source_stride = (size_t)width * 3;
        converted = malloc(source_stride * height);
        if (!converted) {
            snprintf(error, 256, "out of memory");
            return IW_FAILED;
        }
        for (uint32_t y = 0; y < height; y++)
            iw_convert_pixels(pixels + (size_t)y * stride, channels, converted + (size_t)y * source_stride, 3, width);
        source = converted;
        source_channels = 3;
    }
    int imported = source_channels == 4 ? WebPPictureImportRGBA(&picture, source, (int)source_stride)
                                        : WebPPictureImportRGB(&picture, source, (int)source_stride);
    free(converted);
    if (!imported) {
        WebPPictureFree(&picture);
        snprintf(error, 256, "out of memory");
        return IW_FAILED;
    }
    WebPMemoryWriter writer;
    WebPMemoryWriterInit(&writer);
    picture.writer = WebPMemoryWrite;
    picture.custom_ptr = &writer;
    int ok = WebPEncode(&config, &picture);
    int code = picture.error_code;
    WebPPictureFree(&picture);
    if (!ok) {
        WebPMemoryWriterClear(&writer);
        snprintf(error, 256, "WebP encoding failed (libwebp error %d)", code);
        return IW_FAILED;
    }
    /* Handed back in memory of the C allocator's, for iw_free. */
    *bytes = malloc(writer.size ? writer.size : 1);
    if (!*bytes) {
        WebPMemoryWriterClear(&writer);
        snprintf(error, 256, "out of memory");
        return IW_FAILED;
    }
    memcpy(*bytes, writer.mem, writer.size);
    *length = writer.size;
    WebPMemoryWriterClear(&writer);
    return 0;
}
