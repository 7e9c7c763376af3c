/* Animated WebP with libwebp's animation API: every frame decoded (WebPAnimDecoder, which blends
 * and disposes them), and frames encoded into an animation (WebPAnimEncoder). libwebp returns
 * status codes: nothing longjmps here. */
#include "iw_frames.h"
#include "iw_pixels.h"
#include "iw_anim_encode.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <webp/demux.h>
#include <webp/encode.h>
#include <webp/mux.h>

int iw_webp_decode_frames(const uint8_t *data, size_t length, uint32_t max_frames, iw_frame_sink sink, void *context,
                          iw_image *out) {
    memset(out, 0, sizeof *out);
    WebPAnimDecoderOptions options;
    if (!WebPAnimDecoderOptionsInit(&options)) return iw_image_fail(out, IW_ERR_MEMORY, "libwebp version mismatch");
    options.color_mode = MODE_RGBA;
    options.use_threads = 0; /* decodes run one per core already */
    WebPData whole = {data, length};
    WebPAnimDecoder *decoder = WebPAnimDecoderNew(&whole, &options);
    if (!decoder) return iw_image_fail(out, IW_ERR_CORRUPT, "the animation's chunks cannot be read");
    WebPAnimInfo info;
    if (!WebPAnimDecoderGetInfo(decoder, &info) || info.canvas_width == 0 || info.canvas_height == 0) {
        WebPAnimDecoderDelete(decoder);
        return iw_image_fail(out, IW_ERR_CORRUPT, "the animation has no canvas");
    }
    out->image_width = info.canvas_width, out->image_height = info.canvas_height;
    int status = 0, previous = 0;
    uint32_t frames = 0;
    while (WebPAnimDecoderHasMoreFrames(decoder) && !(max_frames && frames >= max_frames)) {
        uint8_t *pixels = NULL;
        int timestamp = 0;
        if (!WebPAnimDecoderGetNext(decoder, &pixels, &timestamp)) {
            /* A damaged first frame fails the image; a later one ends the animation. */
            if (frames == 0) status = iw_image_fail(out, IW_ERR_CORRUPT, "the first frame cannot be decoded");
            break;
        }
        uint32_t delay = timestamp > previous ? (uint32_t)(timestamp - previous) : 0;
        previous = timestamp;
        if (sink(context, pixels, frames, delay) != 0) {
            status = iw_image_fail(out, IW_ERR_LIMIT, "stopped by the caller");
            break;
        }
        frames++;
    }
    WebPAnimDecoderDelete(decoder);
    if (status != 0) return status;
    if (frames == 0) return iw_image_fail(out, IW_ERR_CORRUPT, "animation without frames");
    out->width = info.canvas_width, out->height = info.canvas_height, out->channels = 4;
    return 0;
}

static int failed(char error[256], const char *message) {
    snprintf(error, 256, "%s", message);
    return IW_FAILED;
}

int iw_webp_encode_animation(const uint8_t *const *frames, uint32_t count, const uint32_t *delays_ms, uint32_t width, uint32_t height,
                             int channels, int quality, int lossless, int32_t loop_count, uint8_t **bytes, size_t *length,
                             char error[256]) {
    *bytes = NULL;
    *length = 0;
    if (count == 0) return failed(error, "no frame to encode");
    if (width == 0 || height == 0 || width > WEBP_MAX_DIMENSION || height > WEBP_MAX_DIMENSION) {
        snprintf(error, 256, "WebP holds at most %dx%d pixels, not %ux%u", WEBP_MAX_DIMENSION, WEBP_MAX_DIMENSION, width, height);
        return IW_FAILED;
    }
    WebPAnimEncoderOptions options;
    WebPConfig config;
    WebPPicture picture;
    if (!WebPAnimEncoderOptionsInit(&options) || !WebPConfigInit(&config) || !WebPPictureInit(&picture))
        return failed(error, "libwebp version mismatch");
    /* (0 plays forever; a file that played once says 1.) */
    options.anim_params.loop_count = loop_count < 0 ? 1 : loop_count;
    config.lossless = lossless ? 1 : 0;
    config.quality = (float)(quality < 0 ? 0 : quality > 100 ? 100 : quality);
    WebPAnimEncoder *encoder = WebPAnimEncoderNew((int)width, (int)height, &options);
    if (!encoder) return failed(error, "out of memory");
    picture.width = (int)width, picture.height = (int)height, picture.use_argb = 1;
    uint8_t *rgba = channels == 4 ? NULL : malloc((size_t)width * height * 4);
    int status = 0, timestamp = 0;
    if (channels != 4 && !rgba) status = failed(error, "out of memory");
    for (uint32_t i = 0; i < count && status == 0; i++) {
        const uint8_t *source = frames[i];
        if (rgba) {
            iw_convert_pixels(frames[i], channels, rgba, 4, (size_t)width * height);
            source = rgba;
        }
        if (!WebPPictureImportRGBA(&picture, source, (int)width * 4)) {
            status = failed(error, "out of memory");
        } else if (!WebPAnimEncoderAdd(encoder, &picture, timestamp, &config)) {
            snprintf(error, 256, "WebP animation encoding failed: %s", WebPAnimEncoderGetError(encoder));
            status = IW_FAILED;
        }
        timestamp += (int)(delays_ms[i] > 0x7FFFFFF ? 0x7FFFFFF : delays_ms[i]);
    }
    WebPPictureFree(&picture);
    free(rgba);
    WebPData assembled;
    WebPDataInit(&assembled);
    if (status == 0 && (!WebPAnimEncoderAdd(encoder, NULL, timestamp, NULL) || !WebPAnimEncoderAssemble(encoder, &assembled))) {
        snprintf(error, 256, "WebP animation encoding failed: %s", WebPAnimEncoderGetError(encoder));
        status = IW_FAILED;
    }
    WebPAnimEncoderDelete(encoder);
    if (status == 0) {
        /* Handed back in memory of the C allocator's, for iw_free. */
        if (!(*bytes = malloc(assembled.size ? assembled.size : 1))) {
            status = failed(error, "out of memory");
        } else {
            memcpy(*bytes, assembled.bytes, assembled.size);
            *length = assembled.size;
        }
    }
    WebPDataClear(&assembled);
    return status;
}
