"""The one rule for active records without a coordinator (`qex.core.recovery_rule`), and the
reader's copy of what recovery will write (`qex.cli.stale.as_recovered`)."""

from __future__ import annotations

from qex.cli.stale import as_recovered
from qex.core.recovery_rule import ALIVE, FAIL, REQUEUE, Facts, judge


def facts(*, boot: bool = True, sup: bool = False, job: bool = False,
          launched: bool = True) -> Facts:
    return Facts(same_boot=boot, supervisor_alive=sup, job_alive=job, launched=launched)


def test_a_living_supervisor_is_trusted() -> None:
    assert judge("running", True, facts(sup=True)).action == ALIVE


def test_a_job_that_outlived_its_supervisor_fails_and_is_stopped() -> None:
    verdict = judge("running", True, facts(job=True), "out of memory")
    assert verdict.action == FAIL and verdict.stop_job
    assert verdict.error is not None and "out of memory" in verdict.error


def test_a_start_that_never_happened_goes_back_to_the_queue() -> None:
    assert judge("starting", False, facts(launched=False)).action == REQUEUE
    assert judge("starting", False, facts(launched=True)).action == FAIL
    assert judge("running", False, facts(launched=False)).action == FAIL


def test_the_boot_decides_the_sentence() -> None:
    same = judge("running", True, facts())
    other = judge("running", True, facts(boot=False))
    assert same.action == other.action == FAIL
    assert same.error is not None and "coordinator stopped" in same.error
    assert other.error is not None and "machine restarted" in other.error


def test_the_reader_shows_what_recovery_writes() -> None:
    record = {"id": "x", "state": "running", "pid": 42, "supervisor_pid": 41,
              "blocked_reason": None}
    failed = as_recovered(record, judge("running", True, facts(job=True)), 100.0)
    assert failed["state"] == "failed" and failed["finished_at"] == 100.0
    assert failed["pid"] is None and failed["last_pid"] == 42
    assert "stops the job process" in failed["error"]
    assert record["state"] == "running"  # the read never changes what it read
    queued = as_recovered({"id": "y", "state": "starting"},
                          judge("starting", False, facts(launched=False)), 100.0)
    assert queued["state"] == "queued" and queued["started_at"] is None
