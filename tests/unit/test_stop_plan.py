"""`stop_core.stop_plan`: the one rule both bodies of `kill` and `cancel` follow."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from qex.cli.stop_core import DEQUEUE, REPORT, SEND, stop_plan
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
