"""`stop_core.stop_plan`: the one rule both bodies of `kill` and `cancel` follow."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from many_conn import ManyConn

from qex.cli.stop_core import DEQUEUE, REPORT, SEND, cancels, steps, stop_plan
from qex.core.state_words import FINAL_WORDS

STATES = ["queued", "starting", "running", "stopping", *sorted(FINAL_WORDS)]


def _rec(job_id: str, state: str) -> dict[str, Any]:
    return {"id": job_id, "state": state}


def test_a_group_in_every_phase() -> None:
    stages = [_rec("a", "completed"), _rec("b", "running"), _rec("c", "queued"),
              _rec("d", "queued")]
    plan = stop_plan([(stages, "g")])
    assert [(r["id"], what) for r, what in plan] == [
        ("c", DEQUEUE), ("d", DEQUEUE), ("a", REPORT), ("b", SEND)]


def test_a_job_named_alone_is_always_sent_the_request() -> None:
    """The coordinator words a stopped or queued job's refusal or cancel itself."""
    plan = stop_plan([([_rec("a", "completed")], None), ([_rec("b", "queued")], None)])
    assert [(r["id"], what) for r, what in plan] == [("a", SEND), ("b", SEND)]


def test_a_job_named_twice_is_planned_once_the_first_way() -> None:
    plan = stop_plan([([_rec("a", "queued")], None), ([_rec("a", "queued")], "g")])
    assert [(r["id"], what) for r, what in plan] == [("a", SEND)]


_named = st.lists(
    st.tuples(st.lists(st.tuples(st.sampled_from("abcdefgh"), st.sampled_from(STATES)),
                       min_size=1, max_size=5),
              st.sampled_from([None, "g1", "g2"])),
    max_size=5)


@given(_named)
def test_every_job_once_and_the_queued_stages_first(named: list[Any]) -> None:
    words = [([_rec(i, s) for i, s in recs], group) for recs, group in named]
    plan = stop_plan(words)
    ids = [r["id"] for r, _ in plan]
    first_seen = list(dict.fromkeys(r["id"] for recs, _ in words for r in recs))
    assert sorted(ids) == sorted(first_seen) and len(ids) == len(set(ids))
    whats = [what for _, what in plan]
    dequeued = whats.count(DEQUEUE)
    assert set(whats[:dequeued]) <= {DEQUEUE} and DEQUEUE not in whats[dequeued:]
    rest = [r["id"] for r, what in plan if what != DEQUEUE]
    assert rest == [i for i in first_seen if i in rest]  # the order in which they were named
    for record, what in plan:
        if what == REPORT:
            assert record["state"] in FINAL_WORDS
        if what == DEQUEUE:
            assert record["state"] == "queued"


def test_the_steps_of_a_group_s_kill_and_of_a_list_of_cancels() -> None:
    """The queued stages of a killed group leave in one request; a `cancel` of several
    jobs is one request between the reports that split it."""
    stages = [_rec("a", "completed"), _rec("b", "running"), _rec("c", "queued"),
              _rec("d", "queued")]
    plan = stop_plan([(stages, "g")])
    assert [[r["id"] for r, _ in step] for step in steps(plan, "kill")] == [
        ["c", "d"], ["a"], ["b"]]
    assert [[r["id"] for r, _ in step] for step in steps(plan, "cancel")] == [
        ["c", "d"], ["a"], ["b"]]
    alone = stop_plan([([_rec(i, "queued")], None) for i in "xyz"])
    assert [[r["id"] for r, _ in step] for step in steps(alone, "cancel")] == [["x", "y", "z"]]
    assert [[r["id"] for r, _ in step] for step in steps(alone, "kill")] == [["x"], ["y"], ["z"]]


@given(_named, st.sampled_from(["kill", "cancel"]))
def test_the_steps_keep_the_plan_and_join_only_cancels(named: list[Any], verb: str) -> None:
    plan = stop_plan([([_rec(i, s) for i, s in recs], group) for recs, group in named])
    found = steps(plan, verb)
    assert [item for step in found for item in step] == plan
    for step in found:
        assert step and (len(step) == 1 or all(cancels(what, verb) for _, what in step))
    for before, after in pairwise(found):  # runs are maximal
        assert not (cancels(before[-1][1], verb) and cancels(after[0][1], verb))


@pytest.mark.parametrize("knows_many", [True, False])
def test_the_full_body_sends_a_run_of_cancels_at_once(
        knows_many: bool, capsys: pytest.CaptureFixture[str]) -> None:
    from qex.cli.stop_core import _cancel_run
    from qex.cli.stop_jobs import Outcome

    conn = ManyConn("cancel", knows_many=knows_many, refused={"b": {
        "result": "error", "kind": "no_such_job", "message": "there is no job b"}})
    outcome = Outcome("cancel")
    _cancel_run(outcome, conn, ["a", "b", "c"])
    shown = capsys.readouterr()
    assert shown.out == "a left the queue\nc left the queue\n"
    assert shown.err == "qex: there is no job b\n"
    assert outcome.code == 127
    assert conn.sent == [("cancel_many", ["a", "b", "c"])] + (
        [] if knows_many else [("cancel", "a"), ("cancel", "b"), ("cancel", "c")])
