"""A job started without a scope needs the held supervisor's handle and nothing of the scope
launcher (`qex.platform.held`, `qex.coordinator.scheduling._let_standby_go`)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from support import run_probe

from qex.coordinator import scheduling

LAUNCHER = "qex.platform.launch"


def test_no_launcher_loaded_means_no_standby_to_let_go(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, LAUNCHER, raising=False)
    scheduling._let_standby_go()
    assert LAUNCHER not in sys.modules  # looking for a standby did not load the launcher


def test_a_loaded_launcher_lets_its_standby_go(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    launcher = types.ModuleType(LAUNCHER)
    launcher.discard_standby = lambda: calls.append("discarded")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, LAUNCHER, launcher)
    scheduling._let_standby_go()
    assert calls == ["discarded"]


_START_PROBE = """
import json, os, sys, time, uuid

from qex.coordinator import scheduling
from qex.core.records import JobSpec, JobStatus
from qex.store import jobs
from qex.store.paths import Paths

paths = Paths.from_env()
spec = JobSpec(id=str(uuid.uuid4()), name="probe", cwd="/", command=["true"],
               env=dict(os.environ), cpu=1, mem=1 << 20, submitted_at=time.time())
jobs.create_job(paths, spec, JobStatus.new(spec, boot_id=None, oom_retries=0))
seen = {}
start_job = scheduling.start_job

def observed(coord, job, *rest):
    start_job(coord, job, *rest)
    seen.update(state=str(job.record.state), supervisor=job.supervisor_pid,
                launcher="qex.platform.launch" in sys.modules)
    coord.stopping = True
    coord.stop_reason = "the probe saw its job start"
    coord.kick()

scheduling.start_job = observed
from qex.cli.daemon_start import run_daemon
try:
    run_daemon(detached=True)
finally:
    with open(sys.argv[1], "w") as out:
        json.dump(seen, out)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server is Linux's")
def test_a_coordinator_without_scopes_starts_its_job_without_the_scope_launcher(
        tmp_path: Path) -> None:
    # A queued record from before the start: recovery queues it and the first pass starts
    # it through the fork server (the config asks for no scope, so none is made).
    seen = run_probe(tmp_path, _START_PROBE, config='[enforce]\nmode = "off"\n')
    assert seen["state"] == "starting"
    assert isinstance(seen["supervisor"], int)  # the fork server's child took it
    assert seen["launcher"] is False
