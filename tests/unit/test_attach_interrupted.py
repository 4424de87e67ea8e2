"""`qex run`: a Ctrl-C that comes between the submit and the attach stops the job too.

The submit holds the stop signals (`fastfollow.hold_stop_signals`); the attach delivers the
one that arrived meanwhile to its own handler."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from qex.cli import attaching
from qex.cli.fastfollow import hold_stop_signals
from qex.core.states import Exit
from qex.store.paths import Paths


def test_an_early_interrupt_stops_the_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    paths = Paths.from_env({"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "s")})
    job_id = "6f1c1f8e-5e55-4f55-9c1d-2f6c0e8d9a10"
    job_dir = paths.job_dir(job_id)
    job_dir.mkdir(parents=True)
    final = {"id": job_id, "name": "x", "state": "killed", "signal": 15}
    (job_dir / "status.json").write_text(json.dumps(final))
    stopped: list[str] = []

    def stop(_paths: Paths, stopped_id: str) -> str:
        stopped.append(stopped_id)
        return "kill"

    monkeypatch.setattr(attaching, "_stop", stop)
    record = {"id": job_id, "name": "x", "state": "running"}
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    held = hold_stop_signals()
    try:
        os.kill(os.getpid(), signal.SIGINT)
        assert held.pending()
        with pytest.raises(SystemExit) as done:
            attaching.attach(paths, None, record, timeout=None, stop_job=True)
    finally:
        held.release()
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    assert stopped == [job_id]
    assert done.value.code == Exit.STOPPED
    assert "this command stopped the job" in capsys.readouterr().err
