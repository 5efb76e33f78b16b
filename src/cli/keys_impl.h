/* The key reader's private part, shared by the files that read keys. Each file has one job:
 *   keys.c           the key reader (open, next batch, close) and its read-ahead thread
 *   keys_parallel.c  cli_reader_hash_all: the build's reading and hashing of regular files on several
 *                    threads
 * Not installed. */
#ifndef BK_CLI_KEYS_IMPL_H
#define BK_CLI_KEYS_IMPL_H

#include <string.h>

#include "cli.h"

struct cli_reader {
    char **paths;
    size_t npaths, next_path;
    char *stdin_path[1];
    int fd;
    const char *name;   /* of the open input, for messages */
    bool eof;
    uint64_t key_no;    /* keys read from the open input */
    uint8_t *buf;
    size_t cap, start, end;
    uint64_t bytes_done, total_bytes;
    uint8_t delim;
    bool strip_cr;
    const uint8_t *keys[CLI_BATCH];
    size_t lens[CLI_BATCH];
    size_t raw_lens[CLI_BATCH];
    struct ra *ra;    /* the read-ahead thread (keys.c), or NULL */
    bool parallel;    /* cli_reader_hash_all reads the (regular) inputs on several threads */
    uint64_t stdin_base; /* where a regular-file standard input starts */
};

/* The key's length in its raw bytes s[0..len): the line rule, one trailing '\r' removed unless
 * --keep-cr (or NUL-delimited input). Every reader (plain, read-ahead, parallel hashing) ends its
 * keys with it. */
static inline size_t key_len(const cli_reader *r, const uint8_t *s, size_t len)
{
    return r->strip_cr && len && s[len - 1] == '\r' ? len - 1 : len;
}

/* The input's name in messages. */
static inline const char *display_name(const char *path)
{
    return strcmp(path, "-") == 0 ? "standard input" : path;
}

#endif
