#include "iw_jpeg.h"
#include "iw_png.h"
#include "iw_whole.h"
#include "iw_resample.h"
