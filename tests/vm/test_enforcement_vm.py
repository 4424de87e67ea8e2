"""Linux enforcement end to end, in a real systemd guest: every job in its own transient
user scope and job leaf, hard and soft limits, a proven OOM kill and its retry with a larger
claim, memory.peak in the record, and jobs that outlive a `kill -9` of the coordinator.

Allocations stay modest: under TCG a job far above memory.high (no swap) is throttled for
minutes before memory.max stops it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess

from conftest import MB, Guest, allocate, config_text, python_job

from qex.core.states import Exit
from qex.platform import procs

#: The scope of a supervisor that systemd-run started before its job was known.
STANDBY_UNIT = re.compile(r"^qex-standby_[0-9a-f]{8}-1\.scope$")


def scope_of(guest: Guest, job_id: str) -> str:
    """The unit of the job's (last) scope: named after the job, or a standby's."""
    record = guest.record(job_id)
    enforcement = record.get("enforcement") or {}
    assert enforcement.get("active") is True, guest.explain(job_id)
    unit = enforcement.get("unit")
    assert isinstance(unit, str), guest.explain(job_id)
    assert unit.startswith(f"qex-{job_id[:8]}-") or STANDBY_UNIT.match(unit), guest.explain(job_id)
    return unit


def scopes_in_log(guest: Guest, job_id: str) -> list[str]:
    """Every scope the coordinator's log says the job ran in, one per attempt, in order."""
    text = (guest.state / "run" / "daemon.log").read_text()
    return re.findall(rf"the job {job_id[:8]} \(.*?\) runs in the scope (\S+) ", text)


def test_the_backend_is_the_one_asked_for() -> None:
    from qex.platform.detect import probe

    caps = probe()
    expected = os.environ.get("QEX_VM_EXPECT_BACKEND")
    assert caps.enforcement_possible, caps.reason
    if expected:
        assert caps.scope_backend == expected


def test_job_runs_in_its_own_scope_and_leaf(guest: Guest) -> None:
    guest.write_config(config_text("hard"))
    job, _ = guest.submit_any("--wait", "--cpu", "1", "--mem", "256MB", "--", "cat",
                              "/proc/self/cgroup")
    record = guest.record(job)
    assert record["state"] == "completed", guest.explain(job)
    unit = scope_of(guest, job)
    cgroup = guest.log(job).strip()
    uid = os.getuid()
    pattern = (rf"^0::/user\.slice/user-{uid}\.slice/user@{uid}\.service/qex\.slice/"
               rf"{re.escape(unit)}/job-1$")
    assert re.match(pattern, cgroup), f"{cgroup}\n{guest.explain(job)}"
    enforcement = record["enforcement"]
    assert enforcement["backend"] == "systemd-scope" and enforcement["mode"] == "hard"
    assert enforcement["memory_max"] == 256 * MB and enforcement["swap_max"] == 0
    daemon_log = (guest.state / "run" / "daemon.log").read_text()
    assert "runs without a scope" not in daemon_log


def test_pystemd_supervisor_is_forked_held_and_placed_before_the_job(guest: Guest) -> None:
    """With pystemd the fork server forks the supervisor, and it runs in its scope's
    `supervisor/` leaf while the job runs in `job-1`: the go came after the move."""
    from qex.platform.detect import probe

    if probe().scope_backend != "pystemd":
        return  # systemd-run execs a fresh supervisor; nothing is held there
    guest.env["QEX_SCOPE_STANDBY"] = "0"  # else a job may take a standby, not a held child
    guest.write_config(config_text("hard"))
    guest.submit("--wait", "--cpu", "1", "--mem", "64MB", "--", "true")  # the server is warm
    gate = guest.root / "gate"
    job = guest.submit("--cpu", "1", "--mem", "64MB", "--", "/bin/sh", "-c",
                       f"while [ ! -e {gate} ]; do sleep 0.1; done")
    try:
        guest.wait_for(lambda: guest.record(job)["state"] == "running")
        unit = scope_of(guest, job)
        supervisor = guest.record(job)["supervisor_pid"]
        with open(f"/proc/{supervisor}/stat") as handle:
            parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        with open(f"/proc/{parent}/cmdline", "rb") as handle:
            assert b"--forkserver" in handle.read(), guest.explain(job)
        with open(f"/proc/{supervisor}/cgroup") as handle:
            assert handle.read().strip().endswith(f"/{unit}/supervisor"), guest.explain(job)
        children = subprocess.run(["pgrep", "-P", str(supervisor)], capture_output=True,
                                  text=True, check=False).stdout.split()
        assert children, guest.explain(job)
        with open(f"/proc/{children[0]}/cgroup") as handle:
            assert handle.read().strip().endswith(f"/{unit}/job-1"), guest.explain(job)
    finally:
        gate.touch()
        guest.run("wait", job)
    assert guest.record(job)["state"] == "completed", guest.explain(job)


def standbys(guest: Guest) -> list[tuple[int, str]]:
    """(pid, cgroup) of each standby supervisor of this guest's state directory."""
    found = []
    for pid in subprocess.run(["pgrep", "-f", "qex.supervisor --standby"], capture_output=True,
                              text=True, check=False).stdout.split():
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                environ = handle.read().split(b"\0")
            with open(f"/proc/{pid}/cgroup") as handle:
                where = handle.read().strip()
        except OSError:
            continue
        if f"XDG_STATE_HOME={guest.env['XDG_STATE_HOME']}".encode() in environ:
            found.append((int(pid), where))
    return found


def test_supervisor_waits_ahead_in_a_scope_of_its_own(guest: Guest) -> None:
    """With either backend (systemd-run is installed here) the coordinator starts a
    supervisor ahead of need in a standby scope, at its own start and after each job's; the
    next job runs there, in the same leaves, under its own limits."""
    guest.write_config(config_text("hard"))
    guest.info()  # a coordinator whose config asks for scopes
    for claim in (64, 96):
        # The standby of this guest's coordinator, settled in its scope's `supervisor`
        # leaf before any job was sent to it.
        standby = guest.wait_for(lambda: next(
            (pid for pid, where in standbys(guest)
             if re.search(r"/qex-standby_[0-9a-f]{8}-1\.scope/supervisor$", where)), None),
            what="a standby supervisor settled in its scope")
        job, _ = guest.submit_any("--wait", "--cpu", "1", "--mem", f"{claim}MB", "--", "cat",
                                  "/proc/self/cgroup")
        record = guest.record(job)
        assert record["state"] == "completed", guest.explain(job)
        unit = scope_of(guest, job)
        assert STANDBY_UNIT.match(unit) and record["supervisor_pid"] == standby, \
            guest.explain(job)
        assert guest.log(job).strip().endswith(f"/{unit}/job-1"), guest.explain(job)
        assert record["enforcement"]["memory_max"] == claim * MB
    assert "runs without a scope" not in (guest.state / "run" / "daemon.log").read_text()
    # A standby that no job takes goes when its coordinator does, and touches nothing.
    waiting = guest.wait_for(lambda: [pid for pid, _ in standbys(guest)],
                             what="the standby started after the last job")
    guest.run("coordinator", "stop")
    guest.wait_for(lambda: not any(procs.same_process(pid, None) for pid in waiting),
                   what="the standby to leave with its coordinator")


def test_hard_mode_kills_at_the_claim_and_proves_it(guest: Guest) -> None:
    guest.write_config(config_text("hard", on_oom=0))
    job, proc = guest.submit_any("--wait", "--cpu", "1", "--mem", "64MB",
                                 *python_job(allocate(200)))
    record = guest.record(job)
    assert proc.returncode == Exit.OOM, guest.explain(job)
    assert record["state"] == "oom" and record["oom_evidence"] == "cgroup", guest.explain(job)
    assert record["signal"] == signal.SIGKILL
    assert "allocated" not in guest.log(job)
    assert record["enforcement"]["memory_max"] == 64 * MB


def test_oom_retries_with_a_grown_claim_until_it_fits(guest: Guest) -> None:
    # Needs ~150MB (plus the interpreter): killed at 64MB and 128MB, fits in 256MB.
    guest.write_config(config_text("hard", on_oom=2))
    job, proc = guest.submit_any("--wait", "--cpu", "1", "--mem", "64MB",
                                 *python_job(allocate(150)))
    record = guest.record(job)
    assert proc.returncode == 0, guest.explain(job)
    assert record["state"] == "completed" and record["attempts"] == 3, guest.explain(job)
    assert record["mem"] == 256 * MB
    assert record["enforcement"]["memory_max"] == 256 * MB
    out = guest.log(job)
    assert "--- attempt 2 ---" in out and "--- attempt 3 ---" in out
    assert out.strip().endswith("allocated 150")
    # Each attempt had a scope of its own (the retry went back through the queue).
    units = scopes_in_log(guest, job)
    assert len(units) == 3 and len(set(units)) == 3, guest.explain(job)
    assert units[-1] == scope_of(guest, job)


def test_soft_mode_lets_a_job_pass_its_claim_but_not_the_overcommit(guest: Guest) -> None:
    # A 128MB claim with overcommit 1.1: memory.high = 128MB, memory.max = 140.8MB. Above
    # memory.high, with no swap, the kernel delays the job for every 256KB it adds, by a time
    # that grows with the square of the overage as a fraction of memory.high (capped at 2 s).
    # A narrow gap above a larger claim keeps that fraction small, so the climb to memory.max
    # takes seconds; a wide gap above a small claim took minutes under emulation.
    guest.write_config(config_text("soft", overcommit=1.1, on_oom=0))
    high, ceiling = 128 * MB, int(128 * MB * 1.1)
    # 131MB of anonymous memory (which cannot be reclaimed without swap) plus the
    # interpreter: above the claim, below the ceiling. The kernel trims the job's page cache
    # towards memory.high, so only anonymous memory is sure to pass the claim.
    passing, _ = guest.submit_any("--wait", "--cpu", "1", "--mem", "128MB",
                                  *python_job(allocate(131)))
    record = guest.record(passing)
    assert record["state"] == "completed", guest.explain(passing)
    enforcement = record["enforcement"]
    # The kernel keeps limits in whole pages.
    assert enforcement["memory_high"] == high
    assert ceiling - 4096 < enforcement["memory_max"] <= ceiling
    assert record["usage"]["max_rss"] > high, guest.explain(passing)

    stopped, proc = guest.submit_any("--wait", "--cpu", "1", "--mem", "128MB",
                                     *python_job(allocate(200)))
    record = guest.record(stopped)
    assert proc.returncode == Exit.OOM, guest.explain(stopped)
    assert record["state"] == "oom" and record["oom_evidence"] == "cgroup"


def test_memory_peak_reaches_the_record(guest: Guest) -> None:
    guest.write_config(config_text("hard"))
    job, _ = guest.submit_any("--wait", "--cpu", "1", "--mem", "400MB",
                              *python_job(allocate(100)))
    record = guest.record(job)
    assert record["state"] == "completed", guest.explain(job)
    usage = record["usage"]
    assert usage["source"] == "memory.peak", guest.explain(job)
    assert 100 * MB <= usage["max_rss"] <= 400 * MB


def test_kill_9_of_the_coordinator_leaves_scope_and_job_running(guest: Guest) -> None:
    guest.write_config(config_text("hard"))
    gate = guest.root / "gate"
    job = guest.submit("--cpu", "1", "--mem", "128MB", "--", "/bin/sh", "-c",
                       f"while [ ! -e {gate} ]; do sleep 0.1; done; echo released")
    guest.wait_for(lambda: guest.record(job)["state"] == "running", what="the job to run")
    unit = scope_of(guest, job)
    coordinator = int(guest.info()["pid"])
    job_pid = guest.record(job)["pid"]
    os.kill(coordinator, signal.SIGKILL)
    guest.wait_for(lambda: not procs.exists(coordinator), what="the coordinator to die")
    active = subprocess.run(["systemctl", "--user", "is-active", unit], capture_output=True,
                            text=True, check=False)
    assert active.stdout.strip() == "active", active.stdout + active.stderr
    assert os.path.exists(f"/proc/{job_pid}"), "the job died with the coordinator"
    gate.touch()
    waited = guest.run("wait", job)
    record = guest.record(job)
    assert waited.returncode == 0, waited.stderr + guest.explain(job)
    assert record["state"] == "completed" and guest.log(job).strip() == "released"
    assert int(guest.info()["pid"]) != coordinator
