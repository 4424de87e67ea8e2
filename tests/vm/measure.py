"""Figures for the closing note, measured inside the qex-vm guest (run by tests/vm/run.sh):

* admission -> exec: the time of the job's `starting` event (the coordinator admitted it and
  starts its supervisor) to the wall-clock time the job's program prints, with `[enforce]
  mode` off (plain process group) and hard (scope + job leaf); the median of several jobs.
  The record's own `started_at` cannot serve: the supervisor rewrites it when the job runs;
* the steps of the same launches, from the chain trace (`QEX_CHAIN_TRACE`): the median time
  of each step after the coordinator's `co.start`, so a slow launch shows where it waits;
* the resident memory of one supervisor while its job runs (VmRSS, and Pss when readable).

Prints `MEASURE key value` lines. It asserts no figure, but a measurement that could not be
taken is printed and makes the exit status 1, so tests/vm/run.sh reports it.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

# conftest is beside this file; it imports `support` from tests/ (pytest adds that through
# pyproject; a plain script must do it itself).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import Guest, config_text

RUNS = 7


def fresh_guest() -> Guest:
    root = Path(tempfile.mkdtemp(prefix="qm", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QEX_", "XDG_"))}
    env.update({
        "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"],
        "XDG_CONFIG_HOME": str(root / "config"), "XDG_STATE_HOME": str(root / "state"),
        "QEX_PEERS_DIR": str(root / "peers"), "QEX_IDLE_EXIT_SECS": "120",
    })
    if os.environ.get("QEX_SCOPE_BACKEND"):
        env["QEX_SCOPE_BACKEND"] = os.environ["QEX_SCOPE_BACKEND"]
    return Guest(root=root, env=env)


#: How long `qex events` may take to replay the ring, tried in turn while a job is missing:
#: the limit counts from the command's start, and a busy TCG guest can need more than the
#: first for the command's own start-up and the replay.
EVENT_LIMITS = ("3s", "15s", "60s")


def admitted_at(guest: Guest, jobs: list[str]) -> dict[str, float]:
    """Job id -> the time of its `starting` event, from the coordinator's event ring. Read
    again with a longer limit while one of `jobs` is missing; still missing after the last,
    the coordinator's log says why."""
    found: dict[str, float] = {}
    proc = None
    for limit in EVENT_LIMITS:
        proc = guest.run("events", "--json", "--since", "start", "--timeout", limit)
        found = {}
        for line in proc.stdout.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "job" and event.get("state") == "starting":
                found[event["id"]] = float(event["time"])
        if all(job in found for job in jobs):
            return found
    missing = [job for job in jobs if job not in found]
    log = guest.root / "state" / "qex" / "run" / "daemon.log"
    try:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
    except OSError as exc:
        tail = f"(no log: {exc})"
    stderr = proc.stderr.strip() if proc is not None else ""
    raise RuntimeError(f"no `starting` event for {missing}; events said: {stderr}\n"
                       f"daemon.log ends with:\n{tail}")


def chain_steps(path: Path) -> dict[str, float]:
    """Step -> the median of (step time - the job's `co.start`) over the jobs, in seconds.

    The first occurrence of a step per job counts (a supervisor writes some steps twice)."""
    per_job: dict[str, dict[str, int]] = {}
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    for line in lines:
        parts = line.split()
        if len(parts) != 4 or parts[2] == "-":
            continue
        per_job.setdefault(parts[2], {}).setdefault(parts[3], int(parts[0]))
    offsets: dict[str, list[float]] = {}
    for steps in per_job.values():
        start = steps.get("co.start")
        if start is None:
            continue
        for step, ns in steps.items():
            offsets.setdefault(step, []).append((ns - start) / 1e9)
    return {step: statistics.median(values) for step, values in offsets.items()}


def standbys_ready(trace: Path) -> int:
    """How many standby supervisors have said in the trace that they are ready for a job."""
    try:
        return trace.read_text().count(" sup.standby.ready\n")
    except OSError:
        return 0


def exec_delays(mode: str, extra_env: dict[str, str] | None = None,
                label: str | None = None, standby_ready: bool = False) -> list[float]:
    """Admission -> exec of each of RUNS jobs, one after another. `standby_ready` (the
    systemd-run backend): before each job, wait until its standby (started with the
    coordinator, then at each launch) is ready, as it is when jobs last longer than its
    start."""
    guest = fresh_guest()
    trace = guest.root / "chain.trace"
    guest.env["QEX_CHAIN_TRACE"] = str(trace)
    guest.env.update(extra_env or {})
    guest.write_config(config_text(mode))
    guest.info()  # the coordinator is up before the first measured job
    printed: dict[str, float] = {}
    for index in range(RUNS):
        if standby_ready:
            guest.wait_for(lambda done=index: standbys_ready(trace) > done,
                           what="a ready standby")
        job = guest.submit("--wait", "--cpu", "1", "--mem", "128MB", "--", "date", "+%s.%N")
        printed[job] = float(guest.log(job).strip())
    admitted = admitted_at(guest, list(printed))
    steps = chain_steps(trace)
    if steps:
        ordered = sorted(steps.items(), key=lambda item: item[1])
        print(f"MEASURE steps_{label or mode}_ms " + " ".join(f"{step}={value * 1000:.1f}"
                                                     for step, value in ordered))
    shutil.rmtree(guest.root, ignore_errors=True)
    return [printed[job] - admitted[job] for job in printed]


def supervisor_memory(extra_env: dict[str, str], standby_ready: bool) -> dict[str, int]:
    """VmRSS, VmHWM, Pss and Private_Dirty of a running job's supervisor: a standby when
    `standby_ready` (the job is sent once one is ready), else the one the backend starts."""
    guest = fresh_guest()
    trace = guest.root / "chain.trace"
    guest.env["QEX_CHAIN_TRACE"] = str(trace)
    guest.env.update(extra_env)
    guest.write_config(config_text("hard"))
    if standby_ready:
        guest.info()
        guest.wait_for(lambda: standbys_ready(trace) > 0, what="a ready standby")
    gate = guest.root / "gate"
    job = guest.submit("--cpu", "1", "--mem", "64MB", "--", "/bin/sh", "-c",
                       f"while [ ! -e {gate} ]; do sleep 0.1; done")
    guest.wait_for(lambda: guest.record(job)["state"] == "running")
    pid = guest.record(job)["supervisor_pid"]
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) * 1024
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("Pss", "Private_Dirty"):
                values[key] = int(rest.split()[0]) * 1024
    except OSError:
        pass
    gate.touch()
    guest.run("wait", job)
    shutil.rmtree(guest.root, ignore_errors=True)
    return values


def main() -> int:
    from qex.platform.detect import probe

    print(f"MEASURE backend {probe().scope_backend}")
    failed = 0
    # (label, [enforce] mode, extra environment): `hard` sends the jobs back to back, so
    # some find no standby ready; `hard_ready` waits for one before each job (see
    # exec_delays), as jobs that last longer than a standby's start find it. Without a
    # standby (QEX_SCOPE_STANDBY=0): pystemd's held supervisor (`hard_held`), and the fresh
    # start of either backend (`hard_fresh`), for figures from the same guest.
    backend = probe().scope_backend
    no_standby = {"QEX_SCOPE_STANDBY": "0"}
    cases: list[tuple[str, str, dict[str, str]]] = [
        ("off", "off", {}), ("hard", "hard", {}), ("hard_ready", "hard", {})]
    if backend == "pystemd":
        cases.append(("hard_held", "hard", no_standby))
        cases.append(("hard_fresh", "hard", {**no_standby, "QEX_SCOPE_FORK": "0"}))
    else:
        cases.append(("hard_fresh", "hard", no_standby))
    for label, mode, extra in cases:
        try:
            delays = exec_delays(mode, extra, label, standby_ready=label == "hard_ready")
        except Exception as exc:
            print(f"MEASURE admission_to_exec_{label} failed: {exc!r}")
            failed = 1
            continue
        print(f"MEASURE admission_to_exec_{label}_median_ms {statistics.median(delays) * 1000:.1f} "
              f"(runs: {', '.join(f'{d * 1000:.0f}' for d in delays)})")
    # The supervisor that a job gets: a standby, and the one started without it (pystemd's
    # forked child, or systemd-run's fresh process).
    for label, extra, ready in (("standby", {}, True), ("started", no_standby, False)):
        try:
            for key, value in supervisor_memory(extra, ready).items():
                print(f"MEASURE supervisor_{label}_{key}_MiB {value / 1048576:.1f}")
        except Exception as exc:
            print(f"MEASURE supervisor_{label}_memory failed: {exc!r}")
            failed = 1
    return failed


if __name__ == "__main__":
    sys.exit(main())
