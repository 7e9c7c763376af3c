/* AVIF with libavif: the container's size, frames and orientation, then the first image's YUV to
 * 8-bit RGB(A). libavif returns result codes: nothing longjmps here. */
#include "iw_avif.h"
#include "iw_frames.h"
#include "iw_limits.h"
#include <avif/avif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int result_kind(avifResult result) {
    switch (result) {
    case AVIF_RESULT_OUT_OF_MEMORY: return IW_ERR_MEMORY;
    case AVIF_RESULT_TRUNCATED_DATA: return IW_ERR_TRUNCATED;
    case AVIF_RESULT_UNSUPPORTED_DEPTH:
    case AVIF_RESULT_NO_CODEC_AVAILABLE:
    case AVIF_RESULT_NOT_IMPLEMENTED: return IW_ERR_UNSUPPORTED;
    default: return IW_ERR_CORRUPT;
    }
}

static int fail_result(iw_image *out, avifResult result, const char *what) {
    char message[256];
    snprintf(message, sizeof message, "%s: %s", what, avifResultToString(result));
    return iw_image_fail(out, result_kind(result), message);
}

/* A decoder over `data`, parsed; NULL with `out` set when it cannot be. */
static avifDecoder *parsed(const uint8_t *data, size_t length, uint64_t max_pixels, iw_image *out) {
    avifDecoder *decoder = avifDecoderCreate();
    if (!decoder) {
        iw_image_fail(out, IW_ERR_MEMORY, "cannot create an AVIF decoder");
        return NULL;
    }
    decoder->maxThreads = 1; /* decodes run one per core already */
    decoder->ignoreExif = AVIF_TRUE;
    decoder->ignoreXMP = AVIF_TRUE;
    /* The codec refuses frames over `max_pixels` (0: libavif's default); libavif's own
     * frame-count limit stays, the worker's is checked against the count. */
    if (max_pixels && max_pixels < decoder->imageSizeLimit) decoder->imageSizeLimit = (uint32_t)max_pixels;
    /* Files with a missing pixi or a clap that does not fit are common and harmless. */
    decoder->strictFlags = AVIF_STRICT_DISABLED;
    avifResult result = avifDecoderSetIOMemory(decoder, data, length);
    if (result == AVIF_RESULT_OK) result = avifDecoderParse(decoder);
    if (result != AVIF_RESULT_OK) {
        fail_result(out, result, "cannot read the AVIF container");
        avifDecoderDestroy(decoder);
        return NULL;
    }
    return decoder;
}

/* irot (anticlockwise quarter turns) then imir (0: top and bottom exchanged, 1: left and right),
 * as the EXIF orientation that turns the stored pixels upright. */
static int orientation(const avifImage *image) {
    int angle = (image->transformFlags & AVIF_TRANSFORM_IROT) ? image->irot.angle & 3 : 0;
    int mirror = (image->transformFlags & AVIF_TRANSFORM_IMIR) ? image->imir.mode : -1;
    static const int turned[4] = {1, 8, 3, 6};
    static const int flipped_lr[4] = {2, 7, 4, 5};
    static const int flipped_tb[4] = {4, 5, 2, 7};
    if (mirror == 1) return flipped_lr[angle];
    if (mirror == 0) return flipped_tb[angle];
    return turned[angle];
}

static int header_checks(const iw_avif_info *info, uint64_t max_pixels, uint32_t max_frames, iw_image *out);

int iw_avif_header(const uint8_t *data, size_t length, uint64_t max_pixels, uint32_t max_frames, iw_avif_info *info,
                   iw_image *out) {
    memset(info, 0, sizeof *info);
    memset(out, 0, sizeof *out);
    /* libavif's own size limit would refuse an image over ours as a parse failure: the
     * container is read under libavif's defaults, and our limit checked with a clear message. */
    avifDecoder *decoder = parsed(data, length, 0, out);
    if (!decoder) return IW_FAILED;
    const avifImage *image = decoder->image;
    info->width = out->image_width = image->width;
    info->height = out->image_height = image->height;
    info->depth = image->depth;
    info->has_alpha = decoder->alphaPresent;
    info->frame_count = decoder->imageCount > 0 ? (uint32_t)decoder->imageCount : 1;
    info->orientation = orientation(image);
    info->color_primaries = image->colorPrimaries;
    info->transfer = image->transferCharacteristics;
    if (image->icc.size > 0 && (info->icc = malloc(image->icc.size))) {
        memcpy(info->icc, image->icc.data, image->icc.size);
        info->icc_length = image->icc.size;
    }
    avifDecoderDestroy(decoder);
    int status = header_checks(info, max_pixels, max_frames, out);
    if (status != 0) {
        free(info->icc);
        info->icc = NULL;
        info->icc_length = 0;
    }
    return status;
}

/* The header's size and frames against the limits. */
static int header_checks(const iw_avif_info *info, uint64_t max_pixels, uint32_t max_frames, iw_image *out) {
    char message[IW_LIMIT_MESSAGE_SIZE];
    if (info->width == 0 || info->height == 0) return iw_image_fail(out, IW_ERR_CORRUPT, "image has 0 pixels");
    if (iw_over_pixel_limit(info->width, info->height, max_pixels, message)) return iw_image_fail(out, IW_ERR_LIMIT, message);
    if (max_frames && info->frame_count > max_frames) {
        snprintf(out->error, sizeof out->error, "animation of %u frames exceeds the limit of %u frames", info->frame_count, max_frames);
        out->error_kind = IW_ERR_LIMIT;
        return IW_FAILED;
    }
    return 0;
}

/* An image's YUV as 8-bit RGB (channels 3) or RGBA (4) into `pixels`, its width * channels a row. */
static avifResult to_rgb(const avifImage *image, int channels, uint8_t *pixels) {
    avifRGBImage rgb;
    avifRGBImageSetDefaults(&rgb, image);
    rgb.depth = 8;
    rgb.format = channels == 4 ? AVIF_RGB_FORMAT_RGBA : AVIF_RGB_FORMAT_RGB;
    rgb.pixels = pixels;
    rgb.rowBytes = image->width * (uint32_t)channels;
    return avifImageYUVToRGB(image, &rgb);
}

int iw_avif_decode_into(const uint8_t *data, size_t length, int channels, uint32_t width, uint32_t height, uint8_t *pixels,
                        iw_image *out) {
    /* The codec may decode no more pixels than the container announced (and we accepted). */
    avifDecoder *decoder = parsed(data, length, (uint64_t)width * height, out);
    if (!decoder) return IW_FAILED;
    int status = 0;
    avifResult result = avifDecoderNextImage(decoder);
    if (result != AVIF_RESULT_OK) {
        status = fail_result(out, result, "cannot decode the AVIF image");
    } else if (decoder->image->width != width || decoder->image->height != height) {
        status = iw_image_fail(out, IW_ERR_CORRUPT, "the AVIF image's size differs from its container's");
    } else {
        result = to_rgb(decoder->image, channels, pixels);
        if (result != AVIF_RESULT_OK) status = fail_result(out, result, "cannot convert the AVIF image to RGB");
    }
    avifDecoderDestroy(decoder);
    if (status == 0) {
        out->width = width;
        out->height = height;
        out->channels = channels;
    }
    return status;
}

int iw_avif_decode_frames(const uint8_t *data, size_t length, int channels, uint32_t width, uint32_t height, uint32_t max_frames,
                          iw_frame_sink sink, void *context, iw_image *out) {
    memset(out, 0, sizeof *out);
    avifDecoder *decoder = parsed(data, length, (uint64_t)width * height, out);
    if (!decoder) return IW_FAILED;
    uint8_t *pixels = malloc((size_t)width * height * (size_t)channels);
    int status = pixels ? 0 : iw_image_fail(out, IW_ERR_MEMORY, "out of memory");
    uint32_t frames = 0;
    while (status == 0 && !(max_frames && frames >= max_frames)) {
        avifResult result = avifDecoderNextImage(decoder);
        if (result == AVIF_RESULT_NO_IMAGES_REMAINING) break;
        if (result != AVIF_RESULT_OK) {
            /* A damaged first image fails the file; a later one ends the sequence. */
            if (frames == 0) status = fail_result(out, result, "cannot decode the AVIF image");
            break;
        }
        if (decoder->image->width != width || decoder->image->height != height) {
            status = iw_image_fail(out, IW_ERR_CORRUPT, "an AVIF frame's size differs from its container's");
            break;
        }
        result = to_rgb(decoder->image, channels, pixels);
        if (result != AVIF_RESULT_OK) {
            status = fail_result(out, result, "cannot convert the AVIF image to RGB");
            break;
        }
        double seconds = decoder->imageTiming.duration;
        uint32_t delay = seconds > 0 && seconds < 4e6 ? (uint32_t)(seconds * 1000.0 + 0.5) : 0;
        if (sink(context, pixels, frames, delay) != 0) {
            status = iw_image_fail(out, IW_ERR_LIMIT, "stopped by the caller");
            break;
        }
        frames++;
    }
    free(pixels);
    avifDecoderDestroy(decoder);
    if (status == 0 && frames == 0) status = iw_image_fail(out, IW_ERR_CORRUPT, "no image in the AVIF file");
    if (status == 0) out->width = width, out->height = height, out->channels = channels;
    return status;
}
