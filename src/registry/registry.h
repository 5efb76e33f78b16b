/* The registry of filter types and the generic handle's layout and lifetime: what both the generic
 * handle's dispatch (src/filter.c) and persistence (src/persist/) stand on. Not installed. */
#ifndef BK_REGISTRY_H
#define BK_REGISTRY_H

#include "filters/vtable.h"
#include "bloomkit/filter.h"

struct bk_filter {
    const bk_vtable *vt;
    void *obj;                 /* the typed filter */
    bk_backing backing;
    /* Inserts, chosen once when the handle is made: the plain or the atomic form, NULL when the
     * handle is read-only or the type cannot insert. add_batch may be NULL with add_one set (then
     * add_one is called per key). */
    bk_status (*add_one)(void *f, uint64_t h);
    bk_status (*add_batch)(void *f, const uint64_t *h, size_t n, size_t *done);
    /* What closing must release besides the typed filter (a mapping, its lock): set by whoever made
     * the backing (persist/mmap.c, persist/load.c), NULL for a filter in memory. */
    bk_status (*release)(bk_filter *f);
    /* Mappings (BK_BACKING_MAP_*): the mapped bytes, or the borrowed buffer (map_len == 0 then). */
    uint8_t *map;
    size_t map_len;
    int fd;                    /* shared writable mapping: holds the shared flock; else -1 */
    int owner;                 /* shared writable mapping: the pid that opened it (a forked child
                                * shares its flock but must never finalise the file) */
    const bk_allocator *alloc;        /* the typed filter's allocator: this handle is allocated with it */
};

/* The table of a type, NULL when the type is not compiled in. */
BK_HIDDEN const bk_vtable *bk__vtable_of(uint32_t type);
/* A handle around obj (taken over). On error obj is not freed. */
BK_HIDDEN bk_status bk__filter_make(const bk_vtable *vt, void *obj, bk_backing backing, const bk_allocator *a,
                                    bk_filter **out);

#endif
