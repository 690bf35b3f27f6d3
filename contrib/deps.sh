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
