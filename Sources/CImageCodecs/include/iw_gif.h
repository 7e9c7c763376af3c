#ifndef IW_GIF_H
#define IW_GIF_H
#include <stddef.h>
#include <stdint.h>

/* What iw_gif_decode found. */
typedef struct {
    uint32_t frame_count;    /* frames seen (every frame, once the data is complete) */
    int32_t loop_count;      /* NETSCAPE2.0 loops: 0 forever; -1 when the file has none */
    uint32_t rows;           /* rows of the first frame decoded, in file order */
    uint32_t passes;         /* an interlaced first frame's completed passes (4 when done) */
    uint32_t filled;         /* canvas rows from the top that show their final pixels or, while an
                                interlaced frame arrives, the rows of an earlier pass repeated */
    int interlaced;
    int first_complete;      /* the first frame is wholly decoded */
    int error_kind;          /* IW_ERR_* */
    char error[256];
} iw_gif_result;

/* The canvas a GIF's first frame is shown on: its logical screen, enlarged to hold the first frame
 * where that frame reaches beyond it (as browsers and Pillow do), read by walking the blocks up to
 * the first image descriptor without decoding. 0, 1 when more bytes are needed, or IW_FAILED
 * (not a GIF, a zero-sized first frame, or no image before the trailer). The first frame's own
 * size goes to frame_width and frame_height when they are not NULL. */
int iw_gif_canvas(const uint8_t *data, size_t length, uint32_t *width, uint32_t *height, uint32_t *frame_width,
                  uint32_t *frame_height);

/* Decodes a GIF's first frame with giflib into `canvas` (RGBA, canvas_width x canvas_height from
 * iw_gif_canvas, zeroed by the caller: what the frame does not paint stays transparent),
 * de-interlacing (rows of a pass repeated below them until later passes replace them) and
 * applying its transparent colour, and counts the frames. `data` is the whole file when `complete`, else what
 * has arrived: running out of it is then no error, and the rows decoded so far are in the canvas.
 * With `decode_first` 0 the first frame's pixels are skipped (already in the canvas). Frames of more
 * than max_pixels, and more than max_frames frames (0: no limit), are refused (IW_ERR_LIMIT).
 * 0, or IW_FAILED with out->error. */
int iw_gif_decode(const uint8_t *data, size_t length, int complete, uint64_t max_pixels, uint32_t max_frames, int decode_first,
                  uint8_t *canvas, uint32_t canvas_width, uint32_t canvas_height, iw_gif_result *out);

#endif
