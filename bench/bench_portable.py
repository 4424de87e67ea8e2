"""The cost of the portable implementations: each figure under the Linux implementation
and under QEX_PLATFORM=portable, on the same machine in the same run.

    .venv/bin/python bench/bench_portable.py            # about three minutes on two cores
    .venv/bin/python bench/bench_portable.py --quick    # fewer repetitions, shorter idle

Figures (medians): `qex status <id> --json` and `qex list --json`; one identity check
(`procs.same_process`) and one process listing (`qex watchers`'s `list_processes`);
`qex submit --wait -- true` with a warm coordinator and the time from a job's admission to
its start (the supervisor's start: fork server or a fresh process); how long an
idle coordinator takes to take an edited config file; and how often an idle coordinator
wakes (context switches over the idle window). A private state (XDG_*, QEX_PEERS_DIR in a
temp dir) keeps every real queue out of it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

PY = sys.executable
QEX_BIN = Path(PY).parent / "qex"
QEX = [str(QEX_BIN)] if QEX_BIN.exists() else [PY, "-m", "qex"]
MODES = {"linux": "", "portable": "portable"}


def make_env(root: Path, switch: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QEX_", "XDG_"))}
    for sub in ("home", "config", "state", "run", "peers", "tmp"):
        (root / sub).mkdir(exist_ok=True, mode=0o700)
    env.update({
        "HOME": str(root / "home"), "XDG_CONFIG_HOME": str(root / "config"),
        "XDG_STATE_HOME": str(root / "state"), "XDG_RUNTIME_DIR": str(root / "run"),
        "QEX_PEERS_DIR": str(root / "peers"), "TMPDIR": str(root / "tmp"),
        "QEX_IDLE_EXIT_SECS": "600", "QEX_PLATFORM": switch,
    })
    (root / "config" / "qex.toml").write_text(
        '[budget]\ncpu = 2\nmem = "90%"\n[system]\nreserve_mem = "64MB"\n'
        '[learn]\nenabled = false\n[peers]\nenabled = false\n')
    return env


def qex(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*QEX, *args], env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"qex {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc


def median_ms(n: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def median_cpu_ms(n: int, fn: Callable[[], object]) -> float:
    """CPU time (user + system) of the commands `fn` runs: unlike wall time, it hardly
    depends on what else the machine does."""
    times = []
    for _ in range(n):
        before = children_cpu()
        fn()
        times.append(children_cpu() - before)
    return statistics.median(times) * 1000


def process_cpu(pid: int) -> float:
    """Seconds of CPU of a process and of the children it reaped."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / (os.sysconf("SC_CLK_TCK") or 100)


def serving_cpu(coordinator: int) -> float:
    """The coordinator's CPU and its children's, the fork server's included when it runs."""
    total = process_cpu(coordinator)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(stat[1]) == coordinator and b"--forkserver" in (entry / "cmdline").read_bytes():
                total += process_cpu(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return total


def in_process_ms(switch: str, n: int, code: str) -> float:
    """Median ms of `code` in a fresh interpreter that runs under the switch."""
    program = (
        "import os, statistics, time\n"
        "from qex.platform import procs, proclist\n"
        "me = os.getpid(); token = procs.start_token(me)\n"
        f"times = []\nfor _ in range({n}):\n"
        f"    t = time.perf_counter(); {code}; times.append(time.perf_counter() - t)\n"
        "print(statistics.median(times) * 1000)\n"
    )
    env = dict(os.environ, QEX_PLATFORM=switch)
    done = subprocess.run([PY, "-c", program], env=env, capture_output=True, text=True,
                          check=True)
    return float(done.stdout)


def ctx_switches(pid: int) -> int:
    total = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
            total += int(line.split()[1])
    return total


def config_latency(env: dict[str, str], root: Path, cpu: int) -> float:
    """Seconds from renaming an edited config into place to the coordinator's log line."""
    log = root / "state" / "qex" / "run" / "daemon.log"
    before = log.read_text().count("the configuration file changed")
    fresh = root / "config" / "qex.toml.new"
    fresh.write_text(f'[budget]\ncpu = {cpu}\nmem = "90%"\n[learn]\nenabled = false\n'
                     '[peers]\nenabled = false\n')
    start = time.perf_counter()
    fresh.rename(root / "config" / "qex.toml")
    while log.read_text().count("the configuration file changed") == before:
        if time.perf_counter() - start > 60:
            raise SystemExit("the coordinator did not take the edited config in 60 s")
        time.sleep(0.01)
    return time.perf_counter() - start


def start_latency_ms(env: dict[str, str]) -> float:
    """From the submission to the job's start, from its record (the supervisor's start:
    a fork of the fork server, or a fresh process)."""
    record = json.loads(qex(env, "submit", "--wait", "--json", "--", "true").stdout)
    return float(record["started_at"] - record["submitted_at"]) * 1000


def measure(switch_name: str, quick: bool) -> dict[str, float]:
    root = Path(tempfile.mkdtemp(prefix="qxb", dir="/tmp"))
    env = make_env(root, MODES[switch_name])
    reps = 7 if quick else 21
    out: dict[str, float] = {}
    try:
        job_id = json.loads(qex(env, "submit", "--wait", "--json", "--", "true").stdout)["id"]
        pid = int(json.loads(qex(env, "info", "--json").stdout)["pid"])
        out["status"] = median_ms(reps, lambda: qex(env, "status", job_id, "--json"))
        out["status_cpu"] = median_cpu_ms(reps, lambda: qex(env, "status", job_id, "--json"))
        out["list"] = median_ms(reps, lambda: qex(env, "list", "--json"))
        out["list_cpu"] = median_cpu_ms(reps, lambda: qex(env, "list", "--json"))
        out["submit_wait"] = median_ms(reps, lambda: qex(env, "submit", "--wait", "--", "true"))
        before = serving_cpu(pid)
        for _ in range(reps):
            qex(env, "submit", "--wait", "--", "true")
        out["serving_cpu"] = (serving_cpu(pid) - before) * 1000 / reps
        out["admit_to_running"] = statistics.median(
            start_latency_ms(env) for _ in range(reps))
        out["same_process"] = in_process_ms(MODES[switch_name], 200 if quick else 1000,
                                            "procs.same_process(me, token)")
        out["list_processes"] = in_process_ms(MODES[switch_name], 10 if quick else 30,
                                              "proclist.list_processes()")
        out["config_edit"] = statistics.median(
            config_latency(env, root, 2 + i % 2) * 1000 for i in range(3 if quick else 7))
        idle = 10.0 if quick else 20.0
        time.sleep(1.0)  # let the last edit's looks end
        before = ctx_switches(pid)
        time.sleep(idle)
        out["idle_wakeups_per_20s"] = (ctx_switches(pid) - before) * 20.0 / idle
    finally:
        try:
            os.kill(int(json.loads(qex(env, "info", "--json", "--no-start").stdout)["pid"]),
                    signal.SIGTERM)
        except (SystemExit, OSError, ValueError, KeyError):
            pass
        shutil.rmtree(root, ignore_errors=True)
    return out


ROWS = [
    ("status", "`qex status <id> --json`", "ms"),
    ("status_cpu", "`qex status <id> --json`, CPU", "ms"),
    ("list", "`qex list --json`", "ms"),
    ("list_cpu", "`qex list --json`, CPU", "ms"),
    ("submit_wait", "`qex submit --wait -- true` (warm)", "ms"),
    ("serving_cpu", "CPU per job: coordinator + supervisor", "ms"),
    ("admit_to_running", "submitted -> started (record)", "ms"),
    ("same_process", "one identity check", "ms"),
    ("list_processes", "list every process", "ms"),
    ("config_edit", "idle: config edit taken after", "ms"),
    ("idle_wakeups_per_20s", "idle: context switches per 20 s", ""),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    package = Path(__file__).resolve().parents[1] / "qex"
    subprocess.run([PY, "-m", "compileall", "-q", str(package)], check=False)
    results = {name: measure(name, args.quick) for name in MODES}
    print(f"{'what':<40} {'linux':>10} {'portable':>10}")
    for key, label, unit in ROWS:
        lin, por = results["linux"][key], results["portable"][key]
        print(f"{label:<40} {lin:>8.2f}{unit:>2} {por:>8.2f}{unit:>2}")


if __name__ == "__main__":
    main()
