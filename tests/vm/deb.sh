#!/bin/bash
# Install the built Debian package into a throwaway systemd + cgroup v2 guest and use it
# (tests/vm/deb-guest.sh): the packaged user socket, a job through socket activation with
# [enforce] mode = "hard", a proven OOM kill, `man qex-submit`, bash completion, and
# `qex coordinator stop` through systemctl.
#
#   tests/vm/deb.sh dist/qex-queue_0.7.0-1_all.deb
#
# The package's dependencies come from the Debian mirror, as on a fresh machine. apt in an
# emulated guest is slow (minutes to read the package lists), so when it can, the host
# lets its own apt pick and fetch exactly what the guest lacks (the guest image's dpkg
# status, read with debugfs, stands in for the host's) and the guest runs `dpkg -i` with
# no network. Otherwise the guest gets --net and runs apt itself.
# Knobs: QEX_VM (the qex-vm program), QEX_VM_CACHE, QEX_VM_RUN_TIMEOUT (seconds, default
# 900). Exit status: the guest script's.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
deb=${1:?usage: tests/vm/deb.sh PATH.deb}
deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")
QEX_VM=${QEX_VM:-$ROOT/../shared/vm/qex-vm}
case $QEX_VM in /*) ;; *) QEX_VM=$ROOT/$QEX_VM ;; esac
if [ ! -x "$QEX_VM" ]; then
    echo "deb.sh: no qex-vm program at $QEX_VM; set QEX_VM to its path" >&2
    exit 2
fi
"$QEX_VM" --build >&2   # the image must exist before its dpkg status can be read
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"   # apt downloads as the user _apt
mkdir -p "$work/debs/partial"
image=$(ls -t "${QEX_VM_CACHE:-/var/cache/qex-vm}"/img-*/root.img 2>/dev/null | head -n1 || true)
offline=()
if [ "$(id -u)" = 0 ] && [ -n "$image" ] && command -v debugfs >/dev/null \
    && debugfs -R 'cat /var/lib/dpkg/status' "$image" >"$work/status" 2>/dev/null \
    && [ -s "$work/status" ] \
    && apt-get install --download-only -y -qq --no-install-recommends \
        -o Dir::State::status="$work/status" -o Dir::Cache::archives="$work/debs/" \
        -o Debug::NoLocking=1 "$deb" man-db >&2; then
    rm -rf "$work/debs/partial" "$work/debs/lock"
    echo "deb.sh: fetched $(ls "$work/debs" | wc -l) dependencies for the guest on the host" >&2
    offline=("$work/debs")
    net=()
else
    echo "deb.sh: the guest fetches the dependencies itself (--net)" >&2
    net=(--net)
fi
exec "$QEX_VM" "${net[@]}" --timeout "${QEX_VM_RUN_TIMEOUT:-900}" \
    --share "$ROOT/tests/vm" --share "$(dirname "$deb")" --share "$work" \
    -- bash "$ROOT/tests/vm/deb-guest.sh" "$deb" "${offline[@]}"
