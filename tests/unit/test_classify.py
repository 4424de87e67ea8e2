"""The order in which one attempt's facts become a state (qex.core.classify)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from qex.core.classify import SIGKILL, SIGTERM, AttemptEnd, classify
from qex.core.states import State

GB = 1024**3


def verdict(**facts: object) -> tuple[State, str | None]:
    end = AttemptEnd(**{"exit_code": None, "signal": None, **facts})  # type: ignore[arg-type]
    result = classify(end, claim=GB, timeout=60)
    return result.state, result.oom_evidence


def test_exit_zero_wins_over_everything() -> None:
    assert verdict(exit_code=0, timed_out=True, killed_by_user=True, oom_kills=3,
                   oom_proven=True, oom_source="cgroup") == (State.COMPLETED, None)


def test_timer_comes_next() -> None:
    assert verdict(signal=SIGTERM, timed_out=True, killed_by_user=True)[0] == State.TIMEOUT
    assert verdict(exit_code=3, timed_out=True)[0] == State.TIMEOUT


def test_a_marked_kill_wins_over_memory() -> None:
    assert verdict(signal=SIGKILL, killed_by_user=True, oom_kills=1, oom_proven=True,
                   oom_source="cgroup") == (State.KILLED, None)


def test_a_marked_job_that_trapped_term_and_exited_failed() -> None:
    assert verdict(exit_code=3, killed_by_user=True)[0] == State.FAILED


def test_proven_oom() -> None:
    assert verdict(signal=SIGKILL, oom_kills=1, oom_proven=True, oom_source="cgroup") == (
        State.OOM, "cgroup")
    # A leader that survived its child's kill and exited non-zero: still memory, proven.
    assert verdict(exit_code=137, oom_kills=2, oom_proven=True, oom_source="cgroup") == (
        State.OOM, "cgroup")


def test_session_evidence_says_oom_but_not_proven() -> None:
    end = AttemptEnd(exit_code=None, signal=SIGKILL, oom_kills=1, oom_source="session")
    result = classify(end, claim=GB)
    assert (result.state, result.oom_evidence) == (State.OOM, "session")
    assert result.error is not None and "cannot prove" in result.error
    # Session evidence never turns an exit code into `oom`.
    assert verdict(exit_code=1, oom_kills=1, oom_source="session")[0] == State.FAILED


def test_unexplained_kill() -> None:
    for source in (None, "session", "cgroup"):
        end = AttemptEnd(exit_code=None, signal=SIGKILL, oom_source=source)
        result = classify(end, claim=GB)
        assert result.state == State.KILLED
        assert result.error is not None and "no qex command sent it" in result.error


def test_other_endings() -> None:
    assert verdict(exit_code=2)[0] == State.FAILED
    assert verdict(signal=SIGTERM)[0] == State.KILLED
    assert verdict(signal=11)[0] == State.FAILED
    assert verdict()[0] == State.FAILED


@given(
    exit_code=st.one_of(st.none(), st.integers(0, 255)),
    signal=st.one_of(st.none(), st.integers(1, 64)),
    timed_out=st.booleans(), killed_by_user=st.booleans(),
    oom_kills=st.integers(0, 3), oom_proven=st.booleans(),
    oom_source=st.sampled_from([None, "cgroup", "session"]),
)
def test_always_a_final_state(exit_code: int | None, signal: int | None, timed_out: bool,
                              killed_by_user: bool, oom_kills: int, oom_proven: bool,
                              oom_source: str | None) -> None:
    end = AttemptEnd(exit_code, signal, timed_out, killed_by_user, oom_kills, oom_proven,
                     oom_source)
    result = classify(end, claim=GB)
    assert result.state in {State.COMPLETED, State.FAILED, State.KILLED, State.TIMEOUT, State.OOM}
    if result.state == State.OOM:
        assert oom_kills > 0
        assert not (killed_by_user and signal is not None)
        assert result.oom_evidence in {"cgroup", "session"}
        assert result.oom_evidence != "cgroup" or oom_proven
    if exit_code == 0:
        assert result.state == State.COMPLETED
