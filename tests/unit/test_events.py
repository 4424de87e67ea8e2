"""The event ring: what is published, cursors, gaps, and the bounded memory of a reader."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from qex.coordinator.events import EventHub, retained_from_env
from qex.core.records import JobStatus
from qex.core.states import State


def hub(retained: int = 512) -> EventHub:
    return EventHub(retained=retained, version="0.0.0-test", pid=42, started_at=1000.0)


def record(job_id: str, state: str = "queued", reason: str | None = None) -> JobStatus:
    return JobStatus(id=job_id, name=f"job-{job_id}", command=["true"], cwd="/",
                     state=State(state), blocked_reason=reason)


def events(lines: list[bytes]) -> list[dict[str, Any]]:
    out = []
    for line in lines:
        wire = json.loads(line)
        assert wire["result"] == "event"
        out.append(wire["event"])
    return out


def test_first_sight_then_state_then_reason_changes() -> None:
    h = hub()
    assert h.observe(record("a"), 1.0)
    assert not h.observe(record("a"), 2.0)  # nothing changed
    assert h.observe(record("a", reason="waits for memory"), 3.0)
    assert h.observe(record("a", "running"), 4.0)
    # A reason on a job that is not queued is not a change anyone asked for.
    assert not h.observe(record("a", "running", reason="stale"), 5.0)
    cursor, gaps = h.open_cursor("start", 6.0)
    assert gaps == []
    got = events(h.take(cursor, 6.0))
    assert [(e["seq"], e["state"], e["previous"], e["change"]) for e in got] == [
        (1, "queued", None, "state"),
        (2, "queued", "queued", "reason"),
        (3, "running", "queued", "state"),
    ]
    assert got[0]["job"]["name"] == "job-a"
    assert got[2]["time"] == 4.0


def test_a_short_job_may_skip_running() -> None:
    h = hub()
    h.observe(record("a", "starting"), 1.0)
    h.observe(record("a", "completed"), 2.0)
    cursor, _ = h.open_cursor("start", 3.0)
    got = events(h.take(cursor, 3.0))
    assert got[-1]["previous"] == "starting"
    assert got[-1]["state"] == "completed"


def test_header_names_the_stream() -> None:
    h = hub(retained=3)
    for i in range(5):
        h.observe(record(str(i)), float(i))
    header = h.header(9.0)
    assert header["event"] == "stream"
    assert header["stream_id"] == h.stream_id
    assert (header["first_seq"], header["last_seq"]) == (3, 5)
    assert header["pid"] == 42


def test_start_after_drops_reports_a_counted_gap() -> None:
    h = hub(retained=3)
    for i in range(5):
        h.observe(record(str(i)), float(i))
    cursor, gaps = h.open_cursor("start", 9.0)
    assert len(gaps) == 1 and gaps[0]["event"] == "gap"
    assert gaps[0]["missed"] == 2 and gaps[0]["next_seq"] == 3
    assert [e["seq"] for e in events(h.take(cursor, 9.0))] == [3, 4, 5]


def test_now_gives_only_new_events() -> None:
    h = hub()
    h.observe(record("a"), 1.0)
    cursor, gaps = h.open_cursor("now", 2.0)
    assert gaps == [] and h.take(cursor, 2.0) == []
    h.observe(record("b"), 3.0)
    assert [e["id"] for e in events(h.take(cursor, 3.0))] == ["b"]


def test_same_stream_cursor_continues_after_the_number() -> None:
    h = hub()
    for i in range(4):
        h.observe(record(str(i)), float(i))
    cursor, gaps = h.open_cursor(f"{h.stream_id}:2", 9.0)
    assert gaps == []
    assert [e["seq"] for e in events(h.take(cursor, 9.0))] == [3, 4]
    # The dict form that the reference protocol uses means the same.
    cursor, gaps = h.open_cursor({"after": {"seq": 2, "stream": h.stream_id}}, 9.0)
    assert gaps == [] and [e["seq"] for e in events(h.take(cursor, 9.0))] == [3, 4]


def test_other_stream_gives_an_uncountable_gap_and_all_held_events() -> None:
    h = hub(retained=2)
    for i in range(3):
        h.observe(record(str(i)), float(i))
    cursor, gaps = h.open_cursor("00000000-0000-0000-0000-000000000000:348", 9.0)
    assert len(gaps) == 1 and gaps[0]["missed"] is None
    assert "00000000-0000-0000-0000-000000000000" in gaps[0]["reason"]
    assert h.stream_id in gaps[0]["reason"]
    assert [e["seq"] for e in events(h.take(cursor, 9.0))] == [2, 3]


def test_bare_number_from_the_future_and_from_the_past() -> None:
    h = hub(retained=2)
    for i in range(5):
        h.observe(record(str(i)), float(i))
    cursor, gaps = h.open_cursor("99", 9.0)
    assert gaps[0]["missed"] is None and "stream_id" in gaps[0]["reason"]
    assert h.take(cursor, 9.0) == []
    cursor, gaps = h.open_cursor(1, 9.0)
    assert gaps[0]["missed"] == 2  # 2 and 3 are gone; 4 and 5 are held
    assert [e["seq"] for e in events(h.take(cursor, 9.0))] == [4, 5]


def test_a_slow_reader_gets_a_gap_that_counts_its_loss() -> None:
    h = hub(retained=4)
    cursor, _ = h.open_cursor("now", 0.0)
    for i in range(10):
        h.observe(record(str(i)), float(i))
    got = events(h.take(cursor, 11.0))
    assert got[0]["event"] == "gap" and got[0]["missed"] == 6
    assert [e["seq"] for e in got[1:]] == [7, 8, 9, 10]


def test_take_is_bounded_per_call() -> None:
    h = hub()
    for i in range(100):
        h.observe(record(str(i)), float(i))
    cursor, _ = h.open_cursor("start", 0.0)
    first = h.take(cursor, 0.0, limit=10)
    assert len(first) == 10
    rest: list[bytes] = []
    while True:
        more = h.take(cursor, 0.0, limit=10)
        if not more:
            break
        rest.extend(more)
    assert [e["seq"] for e in events(first + rest)] == list(range(1, 101))


def test_forget_makes_a_reused_id_new() -> None:
    h = hub()
    h.observe(record("a", "completed"), 1.0)
    h.forget("a")
    assert h.observe(record("a", "completed"), 2.0)


def test_retained_from_env() -> None:
    assert retained_from_env({"QEX_EVENTS_RETAINED": "3"}) == 3
    assert retained_from_env({"QEX_EVENTS_RETAINED": "nope"}) == 512
    assert retained_from_env({}) == 512
    assert retained_from_env({"QEX_EVENTS_RETAINED": "0"}) == 1


def test_changed_wakes_a_reader_and_close_says_bye() -> None:
    async def scenario() -> list[str]:
        h = hub()
        seen: list[str] = []

        async def reader() -> None:
            await h.changed()
            seen.append("publish")
            await h.changed()
            seen.append("close")

        task = asyncio.create_task(reader())
        await asyncio.sleep(0)
        h.observe(record("a"), 1.0)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        h.close("no job operates", 2.0)
        await asyncio.wait_for(task, 1.0)
        assert h.bye() == {"event": "bye", "time": 2.0, "reason": "no job operates"}
        return seen

    assert asyncio.run(scenario()) == ["publish", "close"]


@given(st.integers(min_value=1, max_value=20), st.integers(min_value=0, max_value=60),
       st.lists(st.integers(min_value=1, max_value=7), max_size=20))
def test_no_event_is_lost_without_a_gap(retained: int, total: int, reads: list[int]) -> None:
    """Whatever the reading pace, every seq arrives or is counted in a gap, exactly once."""
    h = hub(retained=retained)
    cursor, _ = h.open_cursor("now", 0.0)
    accounted = 0
    published = 0
    pace = iter(reads)
    while published < total:
        step = next(pace, 3)
        for _ in range(step):
            if published < total:
                published += 1
                h.observe(record(str(published)), float(published))
        for event in events(h.take(cursor, 0.0, limit=step)):
            accounted += event["missed"] if event["event"] == "gap" else 1
    while True:
        lines = h.take(cursor, 0.0)
        if not lines:
            break
        for event in events(lines):
            accounted += event["missed"] if event["event"] == "gap" else 1
    assert accounted == total


def test_an_event_shows_the_record_as_it_was_when_published() -> None:
    """The ring holds a copy and turns it into a line only when read: a change made to the
    coordinator's record afterwards must not reach an event published before it."""
    h = hub()
    live = record("a", reason="waits for a core")
    h.observe(live, 1.0)
    live.blocked_reason = "waits for memory"
    live.cpu = 7
    h.observe(live, 2.0)
    first, second = events(h.take(h.open_cursor("start", 3.0)[0], 3.0))
    assert (first["job"]["blocked_reason"], first["job"]["cpu"]) == ("waits for a core", 1)
    assert (second["job"]["blocked_reason"], second["job"]["cpu"]) == ("waits for memory", 7)
    assert first["job"]["state"] == "queued" and first["change"] == "state"
    assert second["change"] == "reason" and second["previous"] == "queued"


def test_every_reader_gets_the_same_line_of_one_event() -> None:
    h = hub()
    h.observe(record("a"), 1.0)
    one = h.take(h.open_cursor("start", 2.0)[0], 2.0)
    two = h.take(h.open_cursor("start", 3.0)[0], 3.0)
    assert one == two and len(one) == 1
