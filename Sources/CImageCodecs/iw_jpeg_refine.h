/* A faster decoder for the AC refinement scans of progressive JPEGs, hooked into libjpeg-turbo's own
 * progressive decoder (see iw_jpeg_refine.c). */
#ifndef IW_JPEG_REFINE_H
#define IW_JPEG_REFINE_H

#include <stdio.h>
#include <jpeglib.h>
#include "iw_jpeg.h"

/* One decoder's hook: libjpeg's methods it wraps, and what it did. Lives as long as the decoder. */
struct iw_refine_hook {
    iw_refine_mode mode;    /* set by the caller (0: the fastest); IW_REFINE_LIBJPEG: no hook */
    void (*start_pass)(j_decompress_ptr cinfo);
    boolean (*decode_mcu)(j_decompress_ptr cinfo, JBLOCKROW *blocks);
    int installed;          /* iw_refine_install ran */
    unsigned long blocks;   /* refinement-scan blocks decoded here (the rest went to libjpeg) */
};

/* Wraps the progressive entropy decoder of `cinfo` (once it exists: after jpeg_start_decompress
 * has selected its modules, e.g. from the progress monitor) so that every later AC refinement scan
 * is decoded here. cinfo->client_data must point at `hook` (it may be the first member of the
 * caller's own struct). Does nothing for a library whose private layout is not the one this file
 * knows (checked at every scan, not assumed). */
void iw_refine_install(j_decompress_ptr cinfo, struct iw_refine_hook *hook);

#endif
