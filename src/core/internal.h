/* What a filter type's source includes: the base helpers (base.h), the body reader and writer of
 * the file format (persist/body.h) and the per-type operations table with the registry
 * (filters/vtable.h). Sources that need less include the narrower header. Not installed. */
#ifndef BK_INTERNAL_H
#define BK_INTERNAL_H

#include "base.h"
#include "body.h"
#include "vtable.h"

#endif
