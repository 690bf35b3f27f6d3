/*
 * The pure parts of consumer groups: Java's String.hashCode and the
 * group -> __consumer_offsets partition rule, and the record schemas of
 * __consumer_offsets (encoded bytes and round trips).
 */
#include "autoconf.h"

#include <string.h>

#include "tests/lib/tap.h"
#include "protocol/group_records.h"

static int32_t
hash(const char *s)
{
	return rn_java_string_hash(s, strlen(s));
}

static void
test_hash(void)
{
	is_int(hash(""), 0, "hash of the empty string");
	is_int(hash("a"), 97, "hash of one ASCII letter");
	is_int(hash("hello"), 99162322, "hash of \"hello\" as Java computes it");
	is_int(hash("\xc3\xa9"), 233, "a two-byte UTF-8 letter counts once (U+00E9)");
	/* U+1F600 is a surrogate pair in UTF-16: D83D DE00 */
	is_int(hash("\xf0\x9f\x98\x80"), 55357 * 31 + 56832,
	    "a code point above U+FFFF hashes as its two UTF-16 units");
	is_int(hash("polygenelubricants"), INT32_MIN,
	    "a string whose hash is INT32_MIN");
	is_int(rn_group_partition("polygenelubricants", 18, 50), 0,
	    "INT32_MIN goes to partition 0 (Kafka's Utils.abs)");
	is_int(rn_group_partition("hello", 5, 50), 99162322 % 50,
	    "a positive hash: hash %% partitions");
	is_int(rn_group_partition("x\xff", 2, 7),
	    ((int64_t)120 * 31 + 0xfffd) % 7,
	    "a malformed byte hashes as U+FFFD");
}

static void
test_offset_records(void)
{
	static const uint8_t want_key[] = { 0, 1, 0, 1, 'g', 0, 1, 't',
	    0, 0, 0, 3 };
	struct rn_grec_offset v = { 42, 7, { "meta", 4 }, 1000, -1 }, d;
	struct rn_grec_key k;
	struct rn_kwriter w;

	rn_kwriter_init(&w);
	rn_grec_offset_key(&w, rn_kstr_c("g"), rn_kstr_c("t"), 3);
	ok(w.len == sizeof(want_key) && memcmp(w.buf, want_key, w.len) == 0,
	    "offset commit key v1: version, group, topic, partition");
	ok(rn_grec_key_decode(w.buf, w.len, &k) == 0 &&
	    k.kind == RN_GREC_OFFSET && rn_kstr_eq(k.group, "g") &&
	    rn_kstr_eq(k.topic, "t") && k.partition == 3,
	    "the key decodes back");
	rn_kwriter_reset(&w);
	rn_grec_offset_value(&w, &v);
	is_int(w.len, 2 + 8 + 4 + 2 + 4 + 8, "offset commit value v3 size");
	ok(rn_grec_offset_decode(w.buf, w.len, &d) == 0 && d.offset == 42 &&
	    d.leader_epoch == 7 && rn_kstr_eq(d.metadata, "meta") &&
	    d.commit_ts == 1000, "the value decodes back");
	ok(rn_grec_key_decode(w.buf, 1, &k) != 0, "a short key is refused");
	rn_kwriter_free(&w);
}

static void
test_group_records(void)
{
	struct rn_grec_member m[2];
	struct rn_grec_group g, d;
	struct rn_grec_key k;
	struct rn_kwriter w;
	struct rn_arena a;
	static const uint8_t sub[] = { 0, 1, 0, 0, 0, 0 }, asg[] = { 9, 9 };

	memset(m, 0, sizeof(m));
	m[0].member_id = rn_kstr_c("m-1");
	m[0].instance_id = rn_kstr_c(NULL);
	m[0].client_id = rn_kstr_c("c");
	m[0].client_host = rn_kstr_c("/127.0.0.1");
	m[0].rebalance_timeout = 300000;
	m[0].session_timeout = 45000;
	m[0].subscription.ptr = sub;
	m[0].subscription.len = sizeof(sub);
	m[0].assignment.ptr = asg;
	m[0].assignment.len = sizeof(asg);
	m[1] = m[0];
	m[1].member_id = rn_kstr_c("m-2");
	m[1].instance_id = rn_kstr_c("static-2");
	memset(&g, 0, sizeof(g));
	g.protocol_type = rn_kstr_c("consumer");
	g.generation = 5;
	g.protocol = rn_kstr_c("range");
	g.leader = rn_kstr_c("m-1");
	g.state_ts = 123;
	g.members = m;
	g.n_members = 2;

	rn_kwriter_init(&w);
	rn_grec_group_key(&w, rn_kstr_c("grp"));
	ok(rn_grec_key_decode(w.buf, w.len, &k) == 0 &&
	    k.kind == RN_GREC_GROUP && rn_kstr_eq(k.group, "grp"),
	    "group metadata key v2 round trip");
	rn_kwriter_reset(&w);
	rn_grec_group_value(&w, &g);
	ok(w.len > 2 && w.buf[0] == 0 && w.buf[1] == 4 && w.buf[2] == 9,
	    "group metadata value v4: flexible, compact strings");
	rn_arena_init(&a, 65536);
	ok(rn_grec_group_decode(w.buf, w.len, &a, &d) == 0 &&
	    rn_kstr_eq(d.protocol_type, "consumer") && d.generation == 5 &&
	    rn_kstr_eq(d.protocol, "range") && rn_kstr_eq(d.leader, "m-1") &&
	    d.state_ts == 123 && d.n_members == 2,
	    "the group value decodes back");
	ok(d.n_members == 2 && rn_kstr_eq(d.members[1].member_id, "m-2") &&
	    rn_kstr_eq(d.members[1].instance_id, "static-2") &&
	    d.members[0].instance_id.len < 0 &&
	    d.members[1].session_timeout == 45000 &&
	    d.members[1].rebalance_timeout == 300000 &&
	    d.members[1].subscription.len == sizeof(sub) &&
	    d.members[1].assignment.len == 2 &&
	    memcmp(d.members[1].assignment.ptr, asg, 2) == 0,
	    "members come back with their ids, timeouts and bytes");
	ok(rn_grec_group_decode(w.buf, w.len - 3, &a, &d) != 0,
	    "a truncated value is refused");
	/* a member count no bytes could hold is refused before allocating */
	w.buf[2 + 9 + 4 + 6 + 4 + 8] = 0xff;
	ok(rn_grec_group_decode(w.buf, w.len, &a, &d) != 0,
	    "an impossible member count is refused");
	rn_arena_free(&a);
	rn_kwriter_free(&w);
}

int
main(void)
{
	plan(20);
	test_hash();
	test_offset_records();
	test_group_records();
	return done_testing();
}
