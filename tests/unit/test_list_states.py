"""`list` with `states`: the coordinator sends the jobs in those states and the active ones,
and `qex list --state ...` prints from that what it printed from every job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coordkit import add_job, make_coord
from hypothesis import given
from hypothesis import strategies as st

from qex.cli.render_table import table_lines
from qex.coordinator import queries
from qex.core import state_words as words
from qex.core.protocol import list_jobs
from qex.core.record_json import sort_key

NOW = 1_000_000.0


def _record(index: int, state: str, pool: str | None) -> dict[str, Any]:
    return {"id": f"{index:08x}-0000-4000-8000-000000000000", "name": f"j{index}",
            "state": state, "cpu": 1, "mem": 1024, "submitted_at": NOW - 100 + index,
            "sequence": index, "started_at": NOW - 50, "finished_at": NOW - 10,
            "assigned": {pool: {"units": 1, "devices": [index % 4]}} if pool else {}}


records_strategy = st.lists(
    st.tuples(st.sampled_from(words.ALL_WORDS),
              st.one_of(st.none(), st.sampled_from(("gpu", "net")))),
    max_size=12,
).map(lambda rows: [_record(i, *row) for i, row in enumerate(rows)])


@given(records=records_strategy,
       wanted=st.sets(st.sampled_from(words.ALL_WORDS), min_size=1))
def test_the_table_from_the_sent_records_is_the_table_from_all(
    records: list[dict[str, Any]], wanted: set[str],
) -> None:
    """The shown jobs are the same, and so are the pool lines, which count the active jobs
    whether they are shown or not."""
    sent = [r for r in records if words.listed_for(r["state"], wanted)]

    def chosen(of: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted((r for r in of if r["state"] in wanted), key=sort_key)
    assert table_lines(chosen(sent), sent, NOW) == table_lines(chosen(records), records, NOW)


def test_the_request_names_the_states_in_order() -> None:
    assert list_jobs(states={"running", "failed"}) == {"op": "list",
                                                       "states": ["failed", "running"]}
    assert list_jobs() == {"op": "list"}


def test_the_coordinator_sends_the_states_asked_for_and_the_active_jobs(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    queued = add_job(coord, submitted_at=1.0)
    running = add_job(coord, submitted_at=2.0, state="running")
    failed = add_job(coord, submitted_at=3.0, state="failed")
    done = add_job(coord, submitted_at=4.0, state="completed")

    def ids(message: dict[str, Any]) -> list[str]:
        return [r["id"] for r in queries.handle_list(coord, message)["jobs"]]

    assert ids({"op": "list", "states": ["failed"]}) == [running.id, failed.id]
    assert ids({"op": "list", "states": ["queued", "completed"]}) == [
        queued.id, running.id, done.id]
    every = [queued.id, running.id, failed.id, done.id]
    # Anything but a list of words (a newer or a broken client): every record.
    assert ids({"op": "list", "states": "failed"}) == every
    assert ids({"op": "list", "states": [1]}) == every
