/* What a filter type's source includes: the base helpers (core/base.h), the body reader and writer
 * of the file format (core/body.h) and the per-type operations table (filters/vtable.h). Sources that
 * need less include the narrower header. Not installed. */
#ifndef BK_INTERNAL_H
#define BK_INTERNAL_H

#include "core/base.h"
#include "core/body.h"
#include "filters/vtable.h"

#endif
