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


def test_a_marked_job_that_trapped_term_and_exited_is_still_killed() -> None:
    # Otherwise `--retries` would start again a job that a person stopped.
    assert verdict(exit_code=3, killed_by_user=True)[0] == State.KILLED
    assert verdict(exit_code=0, killed_by_user=True)[0] == State.COMPLETED


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
        assert not killed_by_user
        assert result.oom_evidence in {"cgroup", "session"}
        assert result.oom_evidence != "cgroup" or oom_proven
    if exit_code == 0:
        assert result.state == State.COMPLETED


def test_oom_plan_raises_until_the_budget() -> None:
    from qex.core.oom_retry import plan_oom

    assert plan_oom(GB, 8 * GB, 2.0, 2).new_mem == 2 * GB
    assert plan_oom(5 * GB, 8 * GB, 2.0, 1).new_mem == 8 * GB     # capped at the budget
    at_budget = plan_oom(8 * GB, 8 * GB, 2.0, 2)
    assert at_budget.new_mem is None and at_budget.at_budget
    spent = plan_oom(GB, 8 * GB, 2.0, 0)
    assert spent.new_mem is None and not spent.at_budget
    assert plan_oom(GB, 8 * GB, 1.0, 1).new_mem == GB + 1         # never the same claim again


def test_session_evidence_from_memory_events(tmp_path: object) -> None:
    from pathlib import Path

    from qex.platform.procgroup import ProcessGroupSandbox, own_memory_events, read_oom_kills
    from qex.platform.sandbox import Limits

    root = Path(str(tmp_path))
    leaf = root / "user.slice" / "session-1.scope"
    leaf.mkdir(parents=True)
    events = leaf / "memory.events"
    events.write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    proc = root / "cgroup"
    proc.write_text("0::/user.slice/session-1.scope\n")
    assert own_memory_events(proc, root) == events
    hybrid = root / "hybrid"
    hybrid.write_text("4:memory:/x\n0::/\n")
    assert own_memory_events(hybrid, root / "nowhere") is None
    assert read_oom_kills(events) == 1
    sandbox = ProcessGroupSandbox("no scope here", events=events)
    sandbox.begin_attempt(Limits(mode="hard", memory_max=GB))
    events.write_text("oom 3\noom_kill 3\n")
    evidence = sandbox.evidence()
    assert (evidence.oom_kills, evidence.proven, evidence.source) == (2, False, "session")
    described = sandbox.describe()
    assert described["active"] is False and described["reason"] == "no scope here"
    assert described["mode"] == "hard" and described["memory_max"] is None
    blind = ProcessGroupSandbox(None, discover=False)
    blind.begin_attempt(Limits())
    assert blind.evidence().source is None
