#!/bin/sh
# Prints the package version from git: v1.2.3 → 1.2.3, v1.2.3-4-gabc → 1.2.3+4.gabc,
# no tag → 0.0.0~git<commit date>.<hash>. A dirty tree adds .dirty.
set -e
d=$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || true)
if [ -n "$d" ]; then
	echo "$d" | sed -e 's/^v//' -e 's/-\([0-9]*\)-g/+\1.g/' -e 's/-dirty$/.dirty/'
	exit 0
fi
h=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
t=$(git log -1 --format=%cd --date=format:%Y%m%d 2>/dev/null || echo 0)
v="0.0.0~git$t.$h"
if ! git diff --quiet HEAD 2>/dev/null; then v="$v.dirty"; fi
echo "$v"
