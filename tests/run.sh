#!/usr/bin/env bash
# The whole test suite, as the README promises and as CI runs it:
#   lint and types, unit and end-to-end tests on this machine, then the Linux integration
#   tests inside a systemd guest (tests/vm/run.sh) when the qex-vm harness is available, and
#   the Slurm engine's tests against a real one-node Slurm (tests/slurm) as root where Slurm
#   is installed (tests/slurm/harness/slurm-up --install installs it).
# QEX_SKIP_VM=1 skips the guest; QEX_VM=/path/to/qex-vm names another harness.
# QEX_SKIP_SLURM=1 skips the Slurm tests; QEX_REQUIRE_SLURM=1 (CI) makes their absence fail.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  echo "tests/run.sh: there is no .venv here; run the README's install command first" >&2
  exit 2
fi
echo "== ruff"; .venv/bin/ruff check qex tests bench
echo "== mypy"; .venv/bin/mypy
echo "== pytest (unit and end-to-end), with the coverage floor of pyproject.toml"
# --cov traces the pytest process and, through `patch` in [tool.coverage.run], every qex
# process that the tests start (commands, coordinators, fork servers, supervisors), each into
# a data file of its own; pytest-cov combines those at the end. A process that was still
# saving then (a fork server that ends after its coordinator) is combined here, and the floor
# (`fail_under`) is held against the whole.
env -u QEX_PLATFORM .venv/bin/pytest -q -p no:cacheprovider --cov --cov-report= \
  --cov-fail-under=0
# A process that a test kills (SIGKILL) in the moment it saves leaves a data file with its
# tables made and nothing in them. It holds no coverage, and a combine that finds only such
# files fails the run, so each one is named and removed first; the floor still holds the
# whole.
.venv/bin/python - <<'PY'
import glob
import os

from coverage.data import CoverageData
from coverage.exceptions import DataError

for path in sorted(glob.glob(".coverage.*")):
    try:
        CoverageData(path).read()
    except DataError as exc:
        print(f"tests/run.sh: removed {path}, a data file that a killed process left empty ({exc})")
        os.unlink(path)
PY
if compgen -G '.coverage.*' >/dev/null; then .venv/bin/coverage combine --append -q; fi
.venv/bin/coverage report
# The fault suite (issue 6): a full disk on a small tmpfs, descriptor exhaustion, a second
# local user attacking the peers dir, kill -9 at each step, bounded fuzzing. Most cases need
# root and skip with the reason otherwise; CI runs as root. About 4 minutes on 2 cores.
echo "== fault suite (tests/faults)"
.venv/bin/pytest -q -p no:cacheprovider tests/faults
# The portable paths, run against the real program: the end-to-end suite a second time with
# QEX_PLATFORM=portable, so qex takes the code paths of macOS and of Linux without systemd
# (`ps` instead of /proc, psutil for memory, no pidfd, no fork server, a polling config
# watch; see qex/platform/host.py and docs/portable.md). A test aid, not a user setting.
# It adds about as long as the first end-to-end pass: 7-9 minutes on 2 busy cores.
echo "== pytest (end-to-end again, QEX_PLATFORM=portable)"
QEX_PLATFORM=portable .venv/bin/pytest -q -p no:cacheprovider tests/e2e
slurm_installed() { command -v slurmctld >/dev/null 2>&1 || [ -x /usr/sbin/slurmctld ]; }
if [ "${QEX_SKIP_SLURM:-0}" != 1 ] && [ "$(id -u)" = 0 ] && slurm_installed; then
  echo "== Slurm engine against a one-node Slurm (tests/slurm)"
  .venv/bin/pytest -q -p no:cacheprovider tests/slurm
elif [ "${QEX_REQUIRE_SLURM:-0}" = 1 ]; then
  echo "tests/run.sh: QEX_REQUIRE_SLURM=1, but the Slurm tests cannot run here (they need root" \
       "and Slurm: tests/slurm/harness/slurm-up --install)" >&2
  exit 1
else
  echo "== Slurm tests skipped (they need root and Slurm: tests/slurm/harness/slurm-up" \
       "--install; or QEX_SKIP_SLURM=1)"
fi
vm=${QEX_VM:-../shared/vm/qex-vm}
if [ "${QEX_SKIP_VM:-0}" != 1 ] && [ -x "$vm" ] && [ -f tests/vm/run.sh ]; then
  echo "== Linux integration tests in a systemd guest"
  QEX_VM="$vm" bash tests/vm/run.sh
else
  echo "== Linux integration tests skipped (no qex-vm harness at $vm, or QEX_SKIP_VM=1)"
fi
