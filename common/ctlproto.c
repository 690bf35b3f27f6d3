#include "autoconf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/ctlproto.h"
#include "common/util.h"

int
rn_ctl_connect(const char *path)
{
	struct sockaddr_un sun;
	int fd, rc;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, path, sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

int
rn_ctl_send(int fd, const void *buf, size_t len)
{
	uint32_t be = htonl((uint32_t)len);
	ssize_t rc;

	if ((rc = rn_write_all(fd, &be, sizeof(be))) < 0)
		return (int)rc;
	if ((rc = rn_write_all(fd, buf, len)) < 0)
		return (int)rc;
	return 0;
}

ssize_t
rn_ctl_recv(int fd, char **buf, size_t max)
{
	uint32_t be;
	ssize_t n;
	size_t len;

	*buf = NULL;
	if ((n = rn_read_full(fd, &be, sizeof(be))) < 0)
		return n;
	if (n != sizeof(be))
		return -ECONNRESET;
	len = ntohl(be);
	if (len > max)
		return -EMSGSIZE;
	if ((*buf = malloc(len ? len : 1)) == NULL)
		return -ENOMEM;
	if ((n = rn_read_full(fd, *buf, len)) < 0 || (size_t)n != len) {
		free(*buf);
		*buf = NULL;
		return n < 0 ? n : -ECONNRESET;
	}
	return (ssize_t)len;
}

const msgpack_object *
rn_mp_get(const msgpack_object *map, const char *key)
{
	size_t klen = strlen(key);
	uint32_t i;

	if (map == NULL || map->type != MSGPACK_OBJECT_MAP)
		return NULL;
	for (i = 0; i < map->via.map.size; i++) {
		const msgpack_object_kv *kv = &map->via.map.ptr[i];
		if (kv->key.type == MSGPACK_OBJECT_STR &&
		    kv->key.via.str.size == klen &&
		    memcmp(kv->key.via.str.ptr, key, klen) == 0)
			return &kv->val;
	}
	return NULL;
}

int
rn_mp_get_str(const msgpack_object *map, const char *key, char *out,
    size_t outlen)
{
	const msgpack_object *o = rn_mp_get(map, key);

	/* a NUL inside would end the copy early: another string */
	if (o == NULL || o->type != MSGPACK_OBJECT_STR ||
	    o->via.str.size >= outlen ||
	    memchr(o->via.str.ptr, '\0', o->via.str.size) != NULL)
		return -1;
	memcpy(out, o->via.str.ptr, o->via.str.size);
	out[o->via.str.size] = '\0';
	return 0;
}

int64_t
rn_mp_get_int(const msgpack_object *map, const char *key, int64_t dflt)
{
	const msgpack_object *o = rn_mp_get(map, key);

	if (o == NULL)
		return dflt;
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
		return o->via.u64 > INT64_MAX ? dflt : (int64_t)o->via.u64;
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		return o->via.i64;
	return dflt;
}

void
rn_mp_pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);

	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

void
rn_mp_pack_nstr(msgpack_packer *pk, const char *s)
{
	if (s != NULL)
		rn_mp_pack_str(pk, s);
	else
		msgpack_pack_nil(pk);
}

ssize_t
rn_ctl_call_verb(const char *path, const char *verb, char **reply,
    bool *connected)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	ssize_t n;
	int fd;

	*reply = NULL;
	*connected = false;
	if ((fd = rn_ctl_connect(path)) < 0)
		return fd;
	*connected = true;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 2);
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, RN_CTL_VERSION);
	rn_mp_pack_str(&pk, "verb");
	rn_mp_pack_str(&pk, verb);
	n = rn_ctl_send(fd, sb.data, sb.size);
	if (n == 0)
		n = rn_ctl_recv(fd, reply, RN_CTL_MAX_REPLY);
	msgpack_sbuffer_destroy(&sb);
	close(fd);
	return n;
}
