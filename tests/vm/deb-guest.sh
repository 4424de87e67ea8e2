#!/bin/bash
# Runs as root inside the qex-vm guest (started by tests/vm/deb.sh): install the Debian
# package the way an administrator would, then use it the way a new user would.
#   deb-guest.sh PATH.deb [DIR]     # DIR: the dependencies, fetched on the host; else apt
# Each step says what it checks; the first that fails ends the script with its status.
set -euo pipefail
trap 'echo "deb-guest: FAILED at line $LINENO: $BASH_COMMAND" >&2' ERR
deb=$1
debs=${2:-}
step() { echo "deb-guest: $*" >&2; }
export DEBIAN_FRONTEND=noninteractive
t0=$(date +%s)

# man-db would index every page after the install, which takes minutes under emulation;
# `man NAME` finds a page by its path without the index.
echo 'man-db man-db/auto-update boolean false' | debconf-set-selections
if [ -n "$debs" ]; then
    step "dpkg -i the package with its dependencies (from Debian, fetched on the host)"
    dpkg -i "$debs"/*.deb "$deb" >/dev/null
else
    step "apt-get install the package (its dependencies come from Debian; man-db for man)"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "$deb" man-db >/dev/null
fi
test -x /usr/bin/qex
test -f /usr/lib/systemd/user/qex.socket -a -f /usr/lib/systemd/user/qex.service
step "the package enabled the user socket for every user"
test -L /etc/systemd/user/sockets.target.wants/qex.socket

step "a fresh user manager (as at the next login) listens on the packaged socket"
uid=$(id -u)
systemctl restart "user@$uid.service"
for _ in $(seq 150); do
    [ "$(systemctl --user is-active qex.socket 2>/dev/null)" = active ] && break
    sleep 0.2
done
[ "$(systemctl --user is-active qex.socket)" = active ]
[ "$(systemctl --user is-active qex.service || true)" != active ]  # not started yet
test -S "$HOME/.local/state/qex/run/qex.sock"

step "[enforce] mode = hard is active here"
mkdir -p "$HOME/.config"
cat > "$HOME/.config/qex.toml" <<'TOML'
[budget]
cpu = 2
mem = "1GB"
[system]
reserve_mem = "0"
max_pressure = 100
[enforce]
mode = "hard"
[retry]
on_oom = 0
TOML
qex config show | tee /dev/stderr | grep -q 'mode: hard — active'
qex systemd status >&2

step "the first command starts the coordinator through the socket, as qex.service"
qex submit --wait --id-file $HOME/ok.id --mem 128MB -- echo hello from the package
[ "$(systemctl --user is-active qex.service)" = active ]
main=$(systemctl --user show qex.service -p MainPID --value)
[ "$(qex info --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')" = "$main" ]
qex status "$(cat $HOME/ok.id)" --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["state"] == "completed", r
e = r["enforcement"]
assert e["active"] is True and e["mode"] == "hard" and e["memory_max"] == 128 << 20, e
'
qex logs "$(cat $HOME/ok.id)" | grep -qx "hello from the package"

step "a job above its claim is killed by the kernel and the record proves it"
rc=0
qex submit --wait -q --id-file $HOME/oom.id --mem 64MB -- python3 -c \
    'b = bytearray(200 << 20); b[::4096] = b"x" * len(b[::4096]); print("allocated")' || rc=$?
[ "$rc" = 99 ] || { echo "deb-guest: the OOM job exited $rc, not 99" >&2; exit 1; }
qex status "$(cat $HOME/oom.id)" --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["state"] == "oom" and r["oom_evidence"] == "cgroup", r
'

step "man qex-submit opens"
man -P cat qex-submit | tee /tmp/man.txt | head -5 >&2
grep -q -- '--mem' /tmp/man.txt

step "bash completion completes commands"
got=$(bash -c 'source /usr/share/bash-completion/completions/qex
COMP_WORDS=(qex subm); COMP_CWORD=1; _qex_completion qex subm qex; printf "%s\n" "${COMPREPLY[@]}"')
echo "$got" | grep -qx submit || { echo "deb-guest: completion gave: $got" >&2; exit 1; }

step "qex coordinator stop: the socket stays, the next command starts it again"
qex coordinator stop >&2
[ "$(systemctl --user is-active qex.service || true)" != active ]
[ "$(systemctl --user is-active qex.socket)" = active ]
qex submit --wait -q -- true
[ "$(systemctl --user is-active qex.service)" = active ]

step "all checks passed in $(( $(date +%s) - t0 ))s"
