/* Small helpers every process uses: clocks, fds, files, ids. */
#ifndef RN_UTIL_H
#define RN_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RN_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

int64_t rn_now_ms(void);      /* CLOCK_MONOTONIC */
int64_t rn_now_us(void);      /* CLOCK_MONOTONIC */
int64_t rn_now_ns(void);      /* CLOCK_MONOTONIC */
int64_t rn_wallclock_ms(void); /* CLOCK_REALTIME, for timestamps users see */

/* FNV-1a over bytes, for in-memory and shared-memory hash tables (never
 * stored on disk). The _more forms go on from an earlier hash, so a key
 * of several parts hashes without being copied together. */
#define RN_FNV32_SEED 2166136261u
#define RN_FNV64_SEED 14695981039346656037ULL
uint32_t rn_hash32_more(uint32_t h, const void *p, size_t len);
uint64_t rn_hash64_more(uint64_t h, const void *p, size_t len);
#define rn_hash32(p, len) rn_hash32_more(RN_FNV32_SEED, (p), (len))
#define rn_hash64(p, len) rn_hash64_more(RN_FNV64_SEED, (p), (len))

int rn_set_nonblock(int fd);
int rn_set_cloexec(int fd, int on);
/* Loop over short writes and EINTR; -errno on failure. */
ssize_t rn_write_all(int fd, const void *buf, size_t len);
ssize_t rn_read_full(int fd, void *buf, size_t len);

/* mkdir -p with mode; 0 or -errno. */
int rn_mkdir_p(const char *path, mode_t mode);
/* Write a whole file atomically (tmp, fsync, rename, fsync dir). */
int rn_write_file_atomic(const char *path, const void *buf, size_t len,
    mode_t mode);
/* The same without a sync: for a file whose directory a later flush syncs
 * with it (a new partition's files until its first flush). */
int rn_write_file_replace(const char *path, const void *buf, size_t len,
    mode_t mode);

/*
 * A TCP connection to host:port, TCP_NODELAY, with connect, reads and
 * writes each bounded by timeout_ms (blocking): the fd, or -errno
 * (-EHOSTUNREACH when the name does not resolve).
 */
int rn_tcp_connect_timed(const char *host, uint16_t port, int timeout_ms);

/* fsync the file name in dirfd: 0, also when there is no such file, or
 * -errno. */
int rn_fsync_at(int dirfd, const char *name);

/* Cut white space off both ends of s in place; its first other char. */
char *rn_trim(char *s);

/* Kafka's Uuid: 16 random bytes, printed as 22 chars of unpadded base64url. */
struct rn_uuid {
	uint8_t b[16];
};
int rn_uuid_random(struct rn_uuid *u);
void rn_uuid_str(const struct rn_uuid *u, char out[23]);
int rn_uuid_parse(const char *s, struct rn_uuid *u);
int rn_uuid_is_zero(const struct rn_uuid *u);

#endif /* RN_UTIL_H */
