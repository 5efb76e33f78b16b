/* The generic handle's layout, shared by src/filter.c (dispatch, registry) and src/format.c (file
 * format, save, load, mmap). Not installed. */
#ifndef BK_PERSIST_H
#define BK_PERSIST_H

#include "internal.h"
#include "bloomkit/filter.h"

struct bk_filter {
    const bk_vtable *vt;
    void *obj;                 /* the typed filter */
    bk_backing backing;
    /* Inserts, chosen once when the handle is made: the plain or the atomic form, NULL when the
     * handle is read-only or the type cannot insert. add_batch may be NULL with add_one set (then
     * add_one is called per key). */
    bk_status (*add_one)(void *f, uint64_t h);
    bk_status (*add_batch)(void *f, const uint64_t *h, size_t n);
    /* Mappings (BK_BACKING_MAP_*): the mapped bytes, or the borrowed buffer (map_len == 0 then). */
    uint8_t *map;
    size_t map_len;
    int fd;                    /* shared writable mapping: holds the shared flock; else -1 */
};

/* A handle around obj (taken over). On error obj is not freed. */
BK_HIDDEN bk_status bk__filter_make(const bk_vtable *vt, void *obj, bk_backing backing, bk_filter **out);
/* Release what a mapping holds (finalising a shared writable one); called by bk_filter_close. */
BK_HIDDEN bk_status bk__filter_unmap(bk_filter *f);

#endif
