#!/bin/sh
# Install (as root) or name (otherwise) the Debian packages runnel needs.
# Sourced by quickstart.sh and tests/run-all.sh.
rn_missing_packages() {
	for p in $(grep -v '^#' "$1"); do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			printf '%s ' "$p"
	done
}

rn_ensure_packages() {
	missing=$(rn_missing_packages "$1")
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" -eq 0 ]; then
		echo "installing Debian packages: $missing"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -q && apt-get install -y -q $missing
	else
		echo "missing Debian packages; as root run:" >&2
		echo "  apt-get install -y $missing" >&2
		return 1
	fi
}

# librdkafka's own test suite from Debian's source package, for
# tests/integration/test_librdkafka_*.py: fetched (as root) and its
# test-runner built once into /var/cache/runnel-tests. Not root: says how.
rn_ensure_librdkafka_tests() {
	if [ "$(id -u)" -ne 0 ]; then
		[ -f "/var/cache/runnel-tests/librdkafka-$(dpkg-query -W \
			-f='${Version}' librdkafka1 2>/dev/null)/src/tests/test.c" ] ||
			echo "librdkafka's test sources are missing; as root run:" \
				"sh $1/contrib/librdkafka-tests.sh fetch" >&2
		return 0
	fi
	sh "$1/contrib/librdkafka-tests.sh" fetch &&
		RDK_JOBS=$(nproc) sh "$1/contrib/librdkafka-tests.sh" build >/dev/null
}
