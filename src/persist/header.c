/* The container header of docs/FORMAT.md section 2: its checksum, parsing (validation steps 1-7)
 * and writing. */
#include "persist/persist.h"

static const uint8_t MAGIC[8] = { 0x89, 'B', 'K', 'F', 0x0D, 0x0A, 0x1A, 0x0A };
#define FLAGS_MUST_UNDERSTAND 0xFFFFu
#define FLAGS_KNOWN BK_FILE_FLAG_CHECKSUM_STALE

/* XXH3-64 of the header with its own checksum field taken as zero. */
uint64_t bk__header_checksum(const uint8_t *h, uint32_t hsize)
{
    static const uint8_t zero[8];
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, h, OFF_HDR_SUM);
    XXH3_64bits_update(&st, zero, 8);
    if (hsize > 64) XXH3_64bits_update(&st, h + 64, hsize - 64);
    return XXH3_64bits_digest(&st);
}

/* Steps 1-7 of the validation order in docs/FORMAT.md (not the type, hash id, sizes or body). */
bk_status bk__header_parse(const uint8_t *b, size_t avail, bk_file_info *in)
{
    size_t n = avail < 8 ? avail : 8;
    if (n && memcmp(b, MAGIC, n) != 0) return BK_ECORRUPT;
    if (avail < 64) return BK_ETRUNCATED;
    if (bk__get_le16(b + OFF_MAJOR) != BK_FORMAT_VERSION_MAJOR) return BK_EVERSION;
    uint32_t hsize = bk__get_le32(b + OFF_HSIZE);
    if (hsize < 64 || hsize % 64 || hsize > HDR_MAX) return BK_ECORRUPT;
    if (avail < hsize) return BK_ETRUNCATED;
    if (bk__header_checksum(b, hsize) != bk__get_le64(b + OFF_HDR_SUM)) return BK_ECHECKSUM;
    uint32_t flags = bk__get_le32(b + OFF_FLAGS);
    if (flags & FLAGS_MUST_UNDERSTAND & ~FLAGS_KNOWN) return BK_EVERSION;
    uint64_t body = bk__get_le64(b + OFF_BODY_SIZE);
    if (body > BODY_MAX) return BK_ETOOBIG;
    in->version_major = BK_FORMAT_VERSION_MAJOR;
    in->version_minor = bk__get_le16(b + OFF_MINOR);
    in->type = bk__get_le32(b + OFF_TYPE);
    in->flags = flags;
    in->hash_id = bk__get_le32(b + OFF_HASH);
    in->header_size = hsize;
    in->seed = bk__get_le64(b + OFF_SEED);
    in->body_size = body;
    in->body_checksum = bk__get_le64(b + OFF_BODY_SUM);
    in->total_size = hsize + body;
    return BK_OK;
}

bk_status bk_filter_peek_header(const void *buf, size_t len, bk_file_info *info)
{
    if (!info || !buf) return BK_EINVAL;
    bk_file_info in;
    bk_status s = bk__header_parse(buf, len, &in);
    if (s == BK_OK) *info = in;
    return s;
}


/* Writers set no flag: bit 0 is only ever set in place, on a mapping opened for shared writing. */
void bk__header_build(uint8_t h[64], const bk_filter *f, uint64_t body_size, uint64_t body_sum)
{
    memset(h, 0, 64);
    memcpy(h, MAGIC, 8);
    bk__put_le16(h + OFF_MAJOR, BK_FORMAT_VERSION_MAJOR);
    bk__put_le16(h + OFF_MINOR, BK_FORMAT_VERSION_MINOR);
    bk__put_le32(h + OFF_TYPE, (uint32_t)f->vt->type);
    bk__put_le32(h + OFF_HASH, BK_HASH_XXH3_64);
    bk__put_le32(h + OFF_HSIZE, 64);
    bk__put_le64(h + OFF_SEED, f->vt->seed(f->obj));
    bk__put_le64(h + OFF_BODY_SIZE, body_size);
    bk__put_le64(h + OFF_BODY_SUM, body_sum);
    bk__put_le64(h + OFF_HDR_SUM, bk__header_checksum(h, 64));
}
