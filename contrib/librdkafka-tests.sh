#!/bin/sh
# librdkafka's own test suite (tests/ of Debian's librdkafka source
# package, the version installed here) for tests/integration/
# test_librdkafka_*.py (tests/lib/rdksuite.py), which run some of its
# tests against runneld.
#
#   contrib/librdkafka-tests.sh fetch   as root: add a deb-src entry for
#                                       Debian's archive, apt-get source the
#                                       installed librdkafka into the cache
#   contrib/librdkafka-tests.sh build   build the test-runner from that
#                                       source once per version, print its
#                                       directory
#
# The cache is $RUNNEL_TEST_CACHE (default /var/cache/runnel-tests):
# librdkafka-VERSION/src is the unpacked source, librdkafka-VERSION/build a
# copy built with the test-runner in build/tests. When the cache is not
# writable (not root), the build goes under ~/.cache/runnel-tests instead.
# RDK_JOBS sets the build's make -j (default 1). The library is built as
# Debian ships it; one test source is edited (keep_0098_topics below).
set -eu

cache=${RUNNEL_TEST_CACHE:-/var/cache/runnel-tests}
version=$(dpkg-query -W -f='${Version}' librdkafka1 2>/dev/null) || {
	echo "$0: librdkafka1 is not installed (contrib/debian-packages)" >&2
	exit 1
}
top=$cache/librdkafka-$version
src=$top/src
# what the build is made with: a change rebuilds it. No TLS or SASL: the
# tests run over PLAINTEXT, and without them the build takes less.
configure_flags="--disable-ssl --disable-gssapi --disable-sasl"
stamp_text="librdkafka $version; configure $configure_flags; test-runner;
0098 keeps its topics"

fetch() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "$0 fetch: needs root (apt-get); as root run: $0 fetch" >&2
		exit 1
	fi
	[ -f "$src/tests/test.c" ] && return 0
	# apt-get source needs a deb-src entry; Debian's images ship only deb.
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
	list=/etc/apt/sources.list.d/runnel-deb-src.sources
	if ! grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list \
		/etc/apt/sources.list.d/; then
		cat >"$list" <<EOF
# Added by runnel's contrib/librdkafka-tests.sh: source packages, for
# librdkafka's own test suite (apt-get source librdkafka).
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
		apt-get update -q
	fi
	mkdir -p "$cache"
	tmp=$(mktemp -d "$cache/fetch.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	# _apt cannot write root's mktemp directory; say so to apt instead
	# of a warning
	(cd "$tmp" && apt-get source -q -o APT::Sandbox::User=root \
		"librdkafka=$version")
	dir=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'librdkafka-*')
	[ -f "$dir/tests/test.c" ] || {
		echo "$0 fetch: no tests/test.c in the source of librdkafka $version" >&2
		exit 1
	}
	mkdir -p "$top"
	rm -rf "$src"
	mv "$dir" "$src"
	echo "librdkafka $version source in $src"
}

# 0098 deletes each case's topic through its consumer and then closes and
# destroys that consumer. librdkafka 2.0.2's close() or rd_kafka_destroy()
# can hang forever once an assigned partition's topic is gone (its fetch
# queue keeps the partition alive; fixed in librdkafka 2.1.0 and 2.6.0),
# which hung about one run of 0098 in three here. The deletions are only
# cleanup (every case makes a topic of its own, and the nodes go with the
# test), so the runner is built without them.
keep_0098_topics() {
	f=$1/tests/0098-consumer-txn.cpp
	n=$(grep -c '^ *Test::delete_topic(c, topic_name.c_str());$' "$f") || n=0
	if [ "$n" -eq 0 ]; then
		echo "$0 build: no topic deletion found in $f" >&2
		exit 1
	fi
	sed -i 's|^\( *\)Test::delete_topic(c, topic_name.c_str());$|\1/* the topic is kept: contrib/librdkafka-tests.sh */|' "$f"
}

build() {
	if [ ! -f "$src/tests/test.c" ]; then
		echo "librdkafka's source ($version) is not in $src;" \
			"as root run: $0 fetch (tests/run-all.sh does)" >&2
		exit 1
	fi
	out=$top/build
	if ! { mkdir -p "$top" && [ -w "$top" ]; } 2>/dev/null; then
		out=${XDG_CACHE_HOME:-$HOME/.cache}/runnel-tests/librdkafka-$version-build
	fi
	mkdir -p "$(dirname "$out")"
	# one build at a time (several worktrees, several test runs)
	exec 9>"$out.lock"
	flock 9
	if [ "$(cat "$out/.runnel-stamp" 2>/dev/null)" != "$stamp_text" ]; then
		unset MAKEFLAGS MFLAGS MAKELEVEL
		rm -rf "$out"
		cp -a "$src" "$out"
		log=$out/.runnel-build.log
		start=$(date +%s)
		keep_0098_topics "$out"
		if ! (cd "$out" && ./configure $configure_flags &&
			make -j"${RDK_JOBS:-1}" libs &&
			make -j"${RDK_JOBS:-1}" -C tests test-runner) >"$log" 2>&1; then
			tail -30 "$log" >&2
			echo "$0 build: failed, log in $log" >&2
			exit 1
		fi
		# 0098 needs RapidJSON (rapidjson-dev), else it only skips
		grep -q 'define WITH_RAPIDJSON 1' "$out/config.h" || {
			echo "$0 build: built without RapidJSON (rapidjson-dev)" >&2
			exit 1
		}
		echo "$stamp_text" >"$out/.runnel-stamp"
		echo "built librdkafka's test-runner in $(($(date +%s) - start)) s" >&2
	fi
	echo "$out/tests"
}

case ${1:-} in
fetch) fetch ;;
build) build ;;
*)
	echo "usage: $0 fetch|build" >&2
	exit 2
	;;
esac
