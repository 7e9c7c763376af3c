#ifndef IW_ANIM_ENCODE_H
#define IW_ANIM_ENCODE_H
#include <stddef.h>
#include <stdint.h>

/* An animated WebP of `count` frames (each width x height x channels bytes, 1, 3 or 4 channels,
 * no padding), each shown for its delay, lossy at `quality` or lossless (libwebp's animation
 * encoder, which stores only what changes between frames). loop_count: 0 forever, -1 once.
 * 0 and a malloc'd buffer (iw_free), or IW_FAILED with `error` set. */
int iw_webp_encode_animation(const uint8_t *const *frames, uint32_t count, const uint32_t *delays_ms, uint32_t width, uint32_t height,
                             int channels, int quality, int lossless, int32_t loop_count, uint8_t **bytes, size_t *length,
                             char error[256]);

/* A GIF of `count` frames (RGBA, RGB or grey as above; with one frame, a still GIF): each frame's
 * own palette of at most 255 colours (giflib's median cut) and, when any pixel is less than half
 * opaque, a transparent index; frames cover the whole canvas and are cleared before the next when
 * transparent. Delays in hundredths of a second (rounded); loop_count 0 forever, -1: no
 * NETSCAPE2.0 block (plays once). 0 and a malloc'd buffer (iw_free), or IW_FAILED. */
int iw_gif_encode(const uint8_t *const *frames, uint32_t count, const uint32_t *delays_ms, uint32_t width, uint32_t height,
                  int channels, int32_t loop_count, uint8_t **bytes, size_t *length, char error[256]);

#endif
