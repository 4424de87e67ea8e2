#!/bin/bash
# Install the built Debian package into a throwaway systemd + cgroup v2 guest and use it
# (tests/vm/deb-guest.sh): the packaged user socket, a job through socket activation with
# [enforce] mode = "hard", a proven OOM kill, `man qex-submit`, bash completion.
#
#   tests/vm/deb.sh dist/qex-queue_0.7.0-1_all.deb
#
# The guest gets --net: apt-get fetches the package's dependencies from the Debian mirror,
# as on a fresh machine. Knobs: QEX_VM (the qex-vm program), QEX_VM_RUN_TIMEOUT (seconds,
# default 900). Exit status: the guest script's.
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
exec "$QEX_VM" --net --timeout "${QEX_VM_RUN_TIMEOUT:-900}" \
    --share "$ROOT/tests/vm" --share "$(dirname "$deb")" \
    -- bash "$ROOT/tests/vm/deb-guest.sh" "$deb"
