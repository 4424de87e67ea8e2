#!/bin/bash
# Run the Linux enforcement tests (tests/vm) inside throwaway systemd + cgroup v2 guests.
#
#   tests/vm/run.sh                     # both scope backends, one VM boot each
#   QEX_VM_BACKENDS=systemd-run tests/vm/run.sh -k oom    # one backend, extra pytest args
#
# The guest has no network: the wheels qex and the tests need (click, pyyaml, tomli-w,
# pytest, and hatchling + editables to install the checkout in editable mode) are fetched
# once on the host into a wheelhouse that is shared with the guest; psutil and pystemd come
# from the image's own /opt/qex/wheels. When the host cannot fetch them either, the guest
# gets --net and pip reaches PyPI itself.
#
# Knobs: QEX_VM (the qex-vm program; default ../shared/vm/qex-vm beside the checkout),
# QEX_VM_BACKENDS ("pystemd systemd-run"), QEX_VM_WHEELHOUSE, QEX_VM_RUN_TIMEOUT (seconds
# per boot, default 1800), QEX_VM_MEASURE=0 to skip the figures, PYTHON (host interpreter).
# Exit status: 0 when every backend passed, else the first failing status.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
QEX_VM=${QEX_VM:-$ROOT/../shared/vm/qex-vm}
case $QEX_VM in /*) ;; *) QEX_VM=$ROOT/$QEX_VM ;; esac
if [ ! -x "$QEX_VM" ]; then
    echo "run.sh: no qex-vm program at $QEX_VM; set QEX_VM to its path" >&2
    exit 2
fi
PY=${PYTHON:-$ROOT/.venv/bin/python}
[ -x "$PY" ] || PY=python3
BACKENDS=${QEX_VM_BACKENDS:-"pystemd systemd-run"}
WHEELS=${QEX_VM_WHEELHOUSE:-${XDG_CACHE_HOME:-$HOME/.cache}/qex-vm-wheels}
TIMEOUT=${QEX_VM_RUN_TIMEOUT:-1800}
REQUIREMENTS="click pyyaml tomli-w pytest hatchling editables"

mkdir -p "$WHEELS"
stamp="$WHEELS/.complete-$(echo "$REQUIREMENTS" | md5sum | cut -c1-12)"
net=()
if [ ! -e "$stamp" ]; then
    echo "run.sh: fetching wheels into $WHEELS" >&2
    # shellcheck disable=SC2086
    if "$PY" -m pip download -q --only-binary :all: --dest "$WHEELS" $REQUIREMENTS; then
        touch "$stamp"
    else
        echo "run.sh: the host could not fetch the wheels; the guest gets --net instead" >&2
        net=(--net)
    fi
fi

# Runs as root in the guest (the default user), in the shared checkout.
read -r -d '' GUEST_SCRIPT <<'GUEST'
set -euo pipefail
t0=$(date +%s.%N)
python3 -m venv --without-pip /tmp/v
pip_in() {
    python3 -m pip --python /tmp/v/bin/python install -q --disable-pip-version-check \
        --no-compile "$@"
}
if [ -n "${QEX_VM_NET:-}" ]; then
    pip_in $QEX_VM_REQUIREMENTS psutil pystemd
    pip_in --no-build-isolation --no-deps -e .
else
    pip_in --no-index --find-links "$QEX_VM_WHEELS" --find-links /opt/qex/wheels \
        $QEX_VM_REQUIREMENTS psutil pystemd
    pip_in --no-index --find-links "$QEX_VM_WHEELS" --no-build-isolation --no-deps -e .
fi
echo "guest: venv ready in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')s" >&2
# Bytecode goes to the guest's /tmp, not into the shared checkout.
export QEX_VM_GUEST=1 PYTHONPYCACHEPREFIX=/tmp/pycache
status=0
/tmp/v/bin/python -m pytest -p no:cacheprovider -q tests/vm "$@" || status=$?
if [ "${QEX_VM_MEASURE:-1}" = 1 ] && [ $status = 0 ]; then
    /tmp/v/bin/python tests/vm/measure.py || status=$?
fi
exit $status
GUEST

overall=0
for backend in $BACKENDS; do
    echo "run.sh: === scope backend $backend ===" >&2
    env_args=(-e "QEX_VM_EXPECT_BACKEND=$backend" -e "QEX_VM_WHEELS=$WHEELS"
              -e "QEX_VM_REQUIREMENTS=$REQUIREMENTS" -e "QEX_VM_MEASURE=${QEX_VM_MEASURE:-1}")
    if [ "$backend" = systemd-run ]; then
        # pystemd is installed too: this also proves that the variable forces the choice.
        env_args+=(-e "QEX_SCOPE_BACKEND=systemd-run")
    fi
    [ ${#net[@]} -gt 0 ] && env_args+=(-e "QEX_VM_NET=1")
    "$QEX_VM" "${net[@]}" --timeout "$TIMEOUT" --share "$ROOT" --share "$WHEELS" \
        "${env_args[@]}" -- bash -c "$GUEST_SCRIPT" guest "$@"
    rc=$?
    echo "run.sh: backend $backend exited $rc" >&2
    if [ $rc != 0 ] && [ $overall = 0 ]; then
        overall=$rc
    fi
done
exit $overall
