#!/usr/bin/env bash
# Build the RPM from this checkout on a Debian machine (rpmbuild from Debian's `rpm`), with
# packaging/rpm/macros.debian-host standing in for Fedora's macro packages:
#
#   bash packaging/rpm/build-here.sh OUTDIR      # -> OUTDIR/qex-queue-<version>-1.noarch.rpm
#
# It proves what can be proved off Fedora: the spec parses, %install runs (the units from
# `qex systemd export`, the man pages and completions from build-extras.py), and %files
# names exactly what %install made (rpmbuild refuses a missing or an unpackaged file).
# The unit tests (%check) are skipped: the Debian build runs them.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${1:?usage: build-here.sh OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
version=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$ROOT/qex/__init__.py")
top=$(mktemp -d)
trap 'rm -rf "$top"' EXIT
mkdir -p "$top"/{SOURCES,SPECS,BUILD,RPMS,SRPMS} "$top/src/qex_queue-$version"
(cd "$ROOT" && git ls-files -co --exclude-standard -z | tar --null -cf - -T -) \
    | tar -xf - -C "$top/src/qex_queue-$version"
tar -czf "$top/SOURCES/qex_queue-$version.tar.gz" -C "$top/src" "qex_queue-$version"
PATH=/usr/sbin:/usr/bin:/sbin:/bin rpmbuild -bb --nodeps --nocheck \
    --define "_topdir $top" \
    --load "$ROOT/packaging/rpm/macros.debian-host" \
    "$ROOT/packaging/rpm/qex-queue.spec"
find "$top/RPMS" -name '*.rpm' -exec cp {} "$OUT"/ \;
ls -l "$OUT"/*.rpm
rpm -qlp "$OUT"/qex-queue-*.rpm | grep -E 'systemd/user|man1/qex-submit|completions|bin/qex$'
