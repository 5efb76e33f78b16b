/* bloomkit: the umbrella header. Include this, link with -lbloomkit (pkg-config bloomkit). */
#ifndef BLOOMKIT_H
#define BLOOMKIT_H

#include "common.h"
#include "math.h"
#include "bloom.h"
#include "blocked.h"
#include "counting.h"
#include "scalable.h"
#include "cuckoo.h"
#include "fuse.h"
#include "aging.h"
#include "quotient.h"
#include "ribbon.h"
#include "cms.h"
#include "topk.h"
#include "bip37.h"
#include "parquet.h"
#include "filter.h"

#endif
