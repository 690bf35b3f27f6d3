/*
 * The control socket protocol, shared by runneld and runnelctl: each
 * message is a 4-byte big-endian length followed by a msgpack map.
 * Requests carry {"v": RN_CTL_VERSION, "verb": str, ...}; replies carry
 * {"ok": bool, "error": str?, ...}.
 */
#ifndef RN_CTLPROTO_H
#define RN_CTLPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#define RN_CTL_VERSION 1
#define RN_CTL_MAX_REQUEST (64 * 1024)
#define RN_CTL_MAX_REPLY (4 * 1024 * 1024)

/* A connected control socket at path, or -errno. */
int rn_ctl_connect(const char *path);
/* Blocking send of one frame; 0 or -errno. */
int rn_ctl_send(int fd, const void *buf, size_t len);
/*
 * Blocking receive of one frame into a malloc'd buffer of at most max
 * bytes: returns its length, -EMSGSIZE when the peer announces more,
 * -ECONNRESET on EOF, -errno otherwise.
 */
ssize_t rn_ctl_recv(int fd, char **buf, size_t max);
/*
 * One request of a verb without fields ({"v", "verb"}) and its reply, in
 * a malloc'd *reply: its length, or -errno. *connected says whether the
 * socket was reached (to tell "cannot connect" from "no reply").
 */
ssize_t rn_ctl_call_verb(const char *path, const char *verb, char **reply,
    bool *connected);

/*
 * Lookups in a msgpack map; NULL / default when absent or mistyped. A
 * string is copied NUL-terminated: -1 when it does not fit or holds a NUL.
 */
const msgpack_object *rn_mp_get(const msgpack_object *map, const char *key);
int rn_mp_get_str(const msgpack_object *map, const char *key, char *out,
    size_t outlen);
int64_t rn_mp_get_int(const msgpack_object *map, const char *key,
    int64_t dflt);

/* Pack a NUL-terminated string (key or value). */
void rn_mp_pack_str(msgpack_packer *pk, const char *s);
/* The same, or nil for NULL. */
void rn_mp_pack_nstr(msgpack_packer *pk, const char *s);

#endif /* RN_CTLPROTO_H */
