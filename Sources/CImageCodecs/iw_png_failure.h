/* libpng's error and warning callbacks, shared by every libpng user in this module (the push
 * reader, the row reader, the encoder): a png struct's error pointer is an iw_png_failure, the
 * first failure recorded stands, and control longjmps to that struct's setjmp, in C. Internal. */
#ifndef IW_PNG_FAILURE_H
#define IW_PNG_FAILURE_H
#include <png.h>

/* What went wrong (kind: IW_ERR_*). */
struct iw_png_failure {
    int kind;
    char text[256];
};

void iw_png_on_error(png_structp png, png_const_charp message);
void iw_png_on_warning(png_structp png, png_const_charp message);

/* The limits and chunk handling every reader in this module sets on its png struct. */
void iw_png_apply_read_limits(png_structp png);
#endif
