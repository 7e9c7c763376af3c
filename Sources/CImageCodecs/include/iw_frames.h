#ifndef IW_FRAMES_H
#define IW_FRAMES_H
#include <stddef.h>
#include <stdint.h>
#include "iw_whole.h"

/* Every frame of an animation, decoded one after the other and composited as a browser shows
 * them: each frame is handed to a sink as the whole canvas (RGBA, or RGB for an AVIF without
 * alpha: `channels`), with how long it is shown. The canvas is the decoder's and changes after
 * the sink returns: the sink copies (or scales) what it keeps. A sink returns 0 to go on, nonzero
 * to stop the decode (which then returns IW_FAILED with the sink's message in out->error).
 * Nothing longjmps: every library used returns status codes. */
typedef int (*iw_frame_sink)(void *context, const uint8_t *pixels, uint32_t index, uint32_t delay_ms);

/* What a GIF's blocks say without decoding any pixel (a walk over the block structure): its
 * frames (image descriptors whose data is complete), the largest frame's pixels, the NETSCAPE2.0
 * loop count (-1 when none; the first block that says), and whether the data ends inside a
 * frame. An LZW code stands for at most 4096 pixels and takes at least 2 bits: a frame of more
 * than 16384 pixels per byte of data cannot be whole. */
typedef struct {
    uint32_t frames;
    int32_t loop_count;
    uint64_t largest_frame;
    uint64_t compressed_bytes; /* of the complete frames' LZW data */
    uint64_t first_pixels, first_bytes; /* the first frame's pixels and LZW data (as far as it goes) */
    int truncated;
} iw_gif_walk;
int iw_gif_walk_frames(const uint8_t *data, size_t length, iw_gif_walk *walk);

/* Every frame of a GIF, on a transparent canvas of canvas_width x canvas_height (iw_gif_canvas):
 * drawn in order with their transparent colour, then disposed as their graphic control block says
 * (2: the frame's rectangle cleared to transparent, as browsers do, rather than to the background
 * colour; 3: the canvas as it was before the frame), delays in milliseconds as stored (hundredths
 * of a second × 10). Frames reaching outside the canvas are clipped. Frames after the first that
 * the data cuts short end the animation, as browsers show what they have; at most `max_frames`
 * (0: all). 0, with out->width/height the canvas, or IW_FAILED. */
int iw_gif_decode_frames(const uint8_t *data, size_t length, uint32_t canvas_width, uint32_t canvas_height, uint32_t max_frames,
                         iw_frame_sink sink, void *context, iw_image *out);

/* Every frame of an animated WebP with libwebp's WebPAnimDecoder (which blends and disposes as the
 * format says), RGBA over the canvas, delays from the frames' timestamps. 0 or IW_FAILED. */
int iw_webp_decode_frames(const uint8_t *data, size_t length, uint32_t max_frames, iw_frame_sink sink, void *context,
                          iw_image *out);

/* Every image of an AVIF sequence (a still file: its one image), 8-bit RGB (channels 3) or RGBA
 * (4) at the container's width x height, delays from the sequence's timing. 0 or IW_FAILED. */
int iw_avif_decode_frames(const uint8_t *data, size_t length, int channels, uint32_t width, uint32_t height, uint32_t max_frames,
                          iw_frame_sink sink, void *context, iw_image *out);

#endif
