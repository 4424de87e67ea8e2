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
echo "== pytest (unit and end-to-end)"
.venv/bin/pytest -q -p no:cacheprovider
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
