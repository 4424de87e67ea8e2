"""qex benchmark: the figures that matter to users, each beside a baseline run on the same
machine in the same run, so the ratio means something on any machine.

    .venv/bin/python bench/bench.py            # full run (~2 minutes on 2 cores)
    .venv/bin/python bench/bench.py --quick    # fewer repetitions

Every figure is a median. The state is private (XDG_* and QEX_PEERS_DIR in a temp dir), so the
benchmark never touches a user's queue. Baselines:
  start-up         `python -c pass` with the same interpreter (the floor any Python CLI pays)
  submit->done     spawning `true` with subprocess and waiting for it (no queue at all)
  drain rate       a 2-worker pool of subprocess `true` (what 2 slots could do with no bookkeeping)
  50 ms jobs       the ideal time: jobs x 50 ms / 2 slots
  memory           RSS of a bare `python -c` that sleeps (the interpreter's own floor)
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = sys.executable
QEX_BIN = Path(PY).parent / "qex"
QEX = [str(QEX_BIN)] if QEX_BIN.exists() else [PY, "-m", "qex"]


def make_env(root: Path, cpu_budget: int = 2) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QEX_", "XDG_"))}
    for sub in ("home", "config", "state", "run", "peers", "tmp"):
        (root / sub).mkdir(exist_ok=True)
    env.update({
        "HOME": str(root / "home"), "XDG_CONFIG_HOME": str(root / "config"),
        "XDG_STATE_HOME": str(root / "state"), "XDG_RUNTIME_DIR": str(root / "run"),
        "QEX_PEERS_DIR": str(root / "peers"), "TMPDIR": str(root / "tmp"),
        "QEX_IDLE_EXIT_SECS": "600",
    })
    (root / "config" / "qex.toml").write_text(
        f'[budget]\ncpu = {cpu_budget}\nmem = "90%"\n[system]\nreserve_mem = "64MB"\n'
        '[queue]\nsettle = "0"\n[learn]\nenabled = false\n[peers]\nenabled = false\n'
    )
    return env


def qex(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*QEX, *args], env=env, capture_output=True, text=True, timeout=600)
    if check and proc.returncode not in (0,):
        raise SystemExit(f"qex {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc


def timed(argv: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def median_of(n: int, fn: object) -> float:
    assert callable(fn)
    return statistics.median(fn() for _ in range(n))


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def pss_kb(pid: int) -> int:
    """Proportional set size: shared pages split among their users (what a process costs)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def ctx_switches(pid: int) -> int:
    total = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
            total += int(line.split()[1])
    return total


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def coordinator_pid(env: dict[str, str]) -> int:
    return int(json.loads(qex(env, "info", "--json").stdout)["pid"])


def drain(env: dict[str, str], root: Path, count: int, argv: list[str]) -> float:
    """Queue `count` jobs behind a paused queue (one fan-out), then time from the resume to
    the end of the last job: the rate the coordinator and supervisors sustain, without the
    cost of `count` separate CLI start-ups."""
    lines = root / f"lines-{count}.txt"
    lines.write_text("".join(f"{i}\n" for i in range(count)))
    qex(env, "pause", "queue", "--reason", "benchmark")
    group = qex(env, "submit", "--each-line", str(lines), "--max-jobs", str(count),
                "--cpu", "1", "--mem", "16MB", "--", *argv, "{}").stdout.strip()
    start = time.perf_counter()
    qex(env, "resume", "queue")
    qex(env, "wait", "-q", group, check=False)
    return time.perf_counter() - start


def pool_drain(count: int, argv: list[str], workers: int = 2) -> float:
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda _: subprocess.run(argv, check=False), range(count)))
    return time.perf_counter() - start


def row(name: str, value: float, unit: str, base: float, base_name: str, target: str) -> None:
    ratio = value / base if base else float("nan")
    print(f"{name:<34} {value:>9.2f} {unit:<6} baseline {base:>8.2f} {unit:<6} "
          f"x{ratio:>6.2f}  ({base_name}; target {target})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and jobs")
    args = parser.parse_args()
    reps = 5 if args.quick else 21
    n_true = 100 if args.quick else 500
    n_50ms = 40 if args.quick else 200

    # Byte-compile qex first: with PYTHONDONTWRITEBYTECODE set (some harnesses set it), an
    # editable install would otherwise compile its changed modules in every measured run.
    import compileall

    compileall.compile_dir(str(HERE.parent / "qex"), quiet=1)
    root = Path(tempfile.mkdtemp(prefix="qxb", dir="/tmp"))
    env = make_env(root)
    try:
        print(f"qex benchmark, {os.cpu_count()} cores, python {sys.version.split()[0]}, medians\n")
        # Warm the coordinator and one finished job for the read paths.
        job = qex(env, "submit", "--wait", "-q", "--cpu", "1", "--mem", "16MB", "--", "true", check=False)
        job_id = qex(env, "list", "--json")
        first = json.loads(job_id.stdout)
        jid = first[0]["id"] if isinstance(first, list) else first["jobs"][0]["id"]
        del job

        base_start = median_of(reps, lambda: timed([PY, "-c", "pass"])) * 1000
        t_status = median_of(reps, lambda: timed([*QEX, "status", jid, "--json"], env)) * 1000
        t_list = median_of(reps, lambda: timed([*QEX, "list", "--json"], env)) * 1000
        row("qex status <id> --json", t_status, "ms", base_start, "python -c pass", "<= 50 ms")
        row("qex list --json", t_list, "ms", base_start, "python -c pass", "<= 50 ms")

        base_true = median_of(reps, lambda: timed(["true"])) * 1000
        t_submit = median_of(reps, lambda: timed(
            [*QEX, "submit", "--wait", "-q", "--cpu", "1", "--mem", "16MB", "--", "true"], env)) * 1000
        row("submit --wait -- true", t_submit, "ms", base_true + base_start, "spawn true + python start",
            "<= 100 ms")

        t_drain = drain(env, root, n_true, ["true"])
        b_drain = pool_drain(n_true, ["true"])
        row(f"{n_true} x true, 2 slots", n_true / t_drain, "jobs/s", n_true / b_drain,
            "2-worker subprocess pool", ">= 60 jobs/s")

        t_50 = drain(env, root, n_50ms, ["sh", "-c", "sleep 0.05", "job"])
        ideal = n_50ms * 0.05 / 2
        row(f"{n_50ms} x 50 ms, 2 slots", t_50, "s", ideal, "ideal", "<= 1.2 x ideal")

        pid = coordinator_pid(env)
        time.sleep(1.0)
        window = 5.0 if args.quick else 20.0
        c0, t0 = ctx_switches(pid), cpu_ticks(pid)
        time.sleep(window)
        c1, t1 = ctx_switches(pid), cpu_ticks(pid)
        wakes = (c1 - c0) / window
        hz = os.sysconf("SC_CLK_TCK")
        print(f"{'idle coordinator wake-ups':<34} {wakes:>9.2f} /s     "
              f"(cpu {100 * (t1 - t0) / hz / window:.3f}%; target: at most one every few seconds)")

        bare = subprocess.Popen([PY, "-c", "import time; time.sleep(3)"])
        time.sleep(0.5)
        base_rss = rss_kb(bare.pid) / 1024
        bare.kill()
        bare.wait()
        row("idle coordinator RSS", rss_kb(pid) / 1024, "MB", base_rss, "bare python", "small")

        gate = root / "gate"
        sid = qex(env, "submit", "--cpu", "1", "--mem", "16MB", "--", "sh", "-c",
                  f"while [ ! -e {gate} ]; do sleep 0.05; done").stdout.strip()
        sup_pid = 0
        for _ in range(200):
            rec = json.loads((root / "state" / "qex" / "jobs" / sid / "status.json").read_text())
            if rec.get("state") == "running" and rec.get("supervisor_pid"):
                sup_pid = int(rec["supervisor_pid"])
                break
            time.sleep(0.05)
        time.sleep(0.3)
        sup_rss = rss_kb(sup_pid) / 1024 if sup_pid else float("nan")
        sup_pss = pss_kb(sup_pid) / 1024 if sup_pid else float("nan")
        gate.touch()
        qex(env, "wait", "-q", sid, check=False)
        row("supervisor RSS", sup_rss, "MB", base_rss, "bare python", "<= 15 MB")
        row("supervisor PSS (shared pages split)", sup_pss, "MB", base_rss, "bare python RSS",
            "<= 15 MB")
    finally:
        pid_file = root / "state" / "qex" / "run" / "coordinator.pid"
        try:
            os.kill(int(pid_file.read_text().split()[0]), signal.SIGTERM)
        except (OSError, ValueError, IndexError):
            pass
        time.sleep(0.3)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
