#!/usr/bin/env bash
# Build the Debian package from this checkout with Debian's own tools, in a scratch copy:
#
#   bash packaging/build-deb.sh OUTDIR        # -> OUTDIR/qex-queue_<version>-1_all.deb
#
# Needs the Build-Depends of packaging/debian/control (as root with QEX_DEB_APT=1 it installs
# them with apt-get). Uses Debian's python3 and dh-python/pybuild with hatchling; the unit
# tests run during the build (DEB_BUILD_OPTIONS=nocheck skips them). The checkout is not
# touched: the tracked and untracked files (not the ignored ones) are copied first.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:?usage: build-deb.sh OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
if [ "${QEX_DEB_APT:-0}" = 1 ]; then
    deps=$(sed -n '/^Build-Depends:/,/^[A-Z]/p' "$ROOT/packaging/debian/control" \
        | grep '^ ' | sed 's/[,(<].*//' | tr -d ' ' | grep -v '^$' | tr '\n' ' ')
    apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        build-essential dpkg-dev $deps >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/src"
(cd "$ROOT" && git ls-files -co --exclude-standard -z | tar --null -cf - -T -) \
    | tar -xf - -C "$work/src"
cp -r "$work/src/packaging/debian" "$work/src/debian"
# Debian's interpreter, not a virtual environment's or a version manager's shim.
(cd "$work/src" && PATH=/usr/sbin:/usr/bin:/sbin:/bin dpkg-buildpackage -us -uc -b)
cp "$work"/*.deb "$OUT"/
ls -l "$OUT"/*.deb
