#ifndef IW_LIMITS_H
#define IW_LIMITS_H
#include <stdint.h>

/* Room for iw_over_pixel_limit's message. */
#define IW_LIMIT_MESSAGE_SIZE 160

/* Whether an image of width x height pixels is over max_pixels (0: no limit). When it is, `message`
 * says so in the words every decoder uses ("image of WxH pixels exceeds the limit of N pixels"). */
int iw_over_pixel_limit(uint64_t width, uint64_t height, uint64_t max_pixels, char message[IW_LIMIT_MESSAGE_SIZE]);

#endif
