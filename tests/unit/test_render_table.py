"""The `qex list` table, the record view, the queue lines and the shared filters."""

from __future__ import annotations

import io
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from qex.cli.queue_lines import health_line, lock_pause_line, pause_lines, queue_pause_line
from qex.cli.render_table import HEADERS, cut, render_jobs, terminal_width, use_color
from qex.core import job_filters as jf
from qex.core import record_view
from qex.core.record_json import display_record, sort_key
from qex.core.record_view import typed
from qex.core.states import FINAL

NOW = 1_000_000.0


def rec(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "0123abcd-0000-4000-8000-000000000000", "name": "build", "state": "queued",
        "cpu": 2, "mem": 4 * 1024**3, "submitted_at": NOW - 90, "sequence": 1,
        "command": ["make"], "cwd": "/work",
    }
    base.update(fields)
    return base


def render(records: list[dict[str, Any]], **kw: Any) -> list[str]:
    return render_jobs([typed(r) for r in records], **kw)


def note_text(record: dict[str, Any]) -> str:
    return record_view.note_text(typed(record))


def result_text(record: dict[str, Any]) -> str:
    return record_view.result_text(typed(record))


def elapsed_secs(record: dict[str, Any], now: float) -> float | None:
    return record_view.elapsed_secs(typed(record), now)


def test_header_and_one_row() -> None:
    lines = render([rec(blocked_reason="waits for cores")], now=NOW)
    assert lines[0].split() == list(HEADERS)
    row = lines[1]
    assert row.startswith("0123abcd  queued")
    assert " build " in row and "4GB" in row and "1m30s" in row
    assert row.endswith("waits for cores")


def test_pipe_output_cuts_nothing() -> None:
    long_name = "a-very-long-job-name-that-goes-on"
    reason = "x" * 300
    lines = render([rec(name=long_name, blocked_reason=reason)], now=NOW, width=None)
    assert long_name in lines[1] and reason in lines[1]


def test_terminal_width_cuts_name_and_note() -> None:
    lines = render([rec(name="n" * 40, blocked_reason="r" * 300)], now=NOW, width=80)
    assert all(len(line) <= 80 for line in lines)
    assert "n" * 15 + "~" in lines[1]
    assert lines[1].endswith("~")


def test_unsafe_names_are_shown_in_safe_form() -> None:
    lines = render([rec(name="evil\x1b[2Jname", blocked_reason="bad\x1b]0;x\x07 text")],
                        now=NOW)
    assert "\x1b" not in "".join(lines) and "\x07" not in "".join(lines)
    assert "evil_2Jname" in lines[1]


def test_colour_marks_only_the_state() -> None:
    plain = render([rec(state="failed", exit_code=3, finished_at=NOW)], now=NOW)
    painted = render([rec(state="failed", exit_code=3, finished_at=NOW)], now=NOW, color=True)
    assert "\x1b[31m" in painted[1]
    assert "\x1b" not in plain[1]
    assert "\x1b" not in painted[0]


def test_use_color_respects_no_color_dumb_and_tty() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert use_color(Tty(), env={}) is True
    assert use_color(Tty(), env={"NO_COLOR": "1"}) is False
    assert use_color(Tty(), env={"TERM": "dumb"}) is False
    assert use_color(Tty(), disabled=True, env={}) is False
    assert use_color(io.StringIO(), env={}) is False
    assert terminal_width(io.StringIO()) is None


def test_notes_forced_reason_and_result() -> None:
    forced = rec(state="running", forced=True, forced_reason="the job claims 64 cores",
                 started_at=NOW - 5)
    assert note_text(forced) == "FORCED the job claims 64 cores"
    assert note_text(rec(state="completed", exit_code=0, finished_at=NOW)) == "exit 0"
    assert note_text(rec(state="failed", exit_code=3)) == "exit 3"
    assert note_text(rec(state="failed", signal=11)) == "stopped by SIGSEGV"
    assert note_text(rec(state="killed", signal=15)) == "killed by SIGTERM"
    skipped = rec(state="skipped", error="the job abc (build) is failed,\nso this did not run")
    assert result_text(skipped) == ("did not run: the job abc (build) is failed, so this did "
                                    "not run")


def test_elapsed_by_state() -> None:
    assert elapsed_secs(rec(), NOW) == 90
    assert elapsed_secs(rec(state="running", started_at=NOW - 10), NOW) == 10
    done = rec(state="completed", started_at=NOW - 50, finished_at=NOW - 20)
    assert elapsed_secs(done, NOW) == 30
    never = rec(state="cancelled", started_at=None, finished_at=NOW - 30)
    assert elapsed_secs(never, NOW) == 60


def test_display_record_keeps_the_stored_values_apart() -> None:
    raw = rec(name="a b", tags=["x y"], locks=["l\x1b"], command=["echo", "a\nb"],
              cwd="/tmp/\x1b", error="e\x1bx")
    shown = display_record(raw)
    assert shown["name"] == "a_b" and shown["tags"] == ["x_y"] and shown["locks"] == ["l\\x1b"]
    assert shown["command"] == ["echo", "a\\nb"] and shown["cwd"] == "/tmp/\\x1b"
    assert shown["error"] == "e x"
    assert raw["name"] == "a b"


_HOSTILE = st.text(alphabet=st.sampled_from("ab -_.\\\n\t\x1b\x7f\x85\u2028\u00e9/"),
                  max_size=12)


@given(name=_HOSTILE, reason=st.one_of(st.none(), _HOSTILE),
       error=st.one_of(st.none(), _HOSTILE), forced_reason=st.one_of(st.none(), _HOSTILE),
       state=st.sampled_from(("queued", "running", "failed", "killed", "completed")),
       forced=st.booleans(), engine=st.one_of(st.none(), _HOSTILE), pool=_HOSTILE)
def test_the_table_of_the_shown_records_is_the_table_of_the_stored_ones(
    name: str, reason: str | None, error: str | None, forced_reason: str | None, state: str,
    forced: bool, engine: str | None, pool: str,
) -> None:
    """`qex list` draws its table from the `list --json` document, whose records went through
    `display_record`: the table must come out the same as from the stored records."""
    stored = rec(name=name, state=state, blocked_reason=reason, error=error, forced=forced,
                 forced_reason=forced_reason, engine=engine, engine_id=engine,
                 started_at=NOW - 5, signal=9, exit_code=2,
                 assigned={pool: {"units": 1, "devices": [0, 1]}},
                 command=["echo", name], cwd=f"/tmp/{name}", locks=[name], tags=[name])
    shown = display_record(stored)
    for width in (None, 80):
        assert render_jobs([typed(shown)], now=NOW, width=width) == render_jobs(
            [typed(stored)], now=NOW, width=width)
    assert record_view.pool_use_lines([shown]) == record_view.pool_use_lines([stored])


def test_sort_key_orders_by_time_then_sequence() -> None:
    records = [rec(id="c", submitted_at=2, sequence=1), rec(id="a", submitted_at=1, sequence=9),
               rec(id="b", submitted_at=2, sequence=0)]
    assert [r["id"] for r in sorted(records, key=sort_key)] == ["a", "b", "c"]


@given(st.text(max_size=50), st.integers(0, 60))
def test_cut_never_exceeds_the_width(text: str, width: int) -> None:
    out = cut(text, width)
    assert len(out) <= width
    if len(text) <= width:
        assert out == text


# --- queue lines ------------------------------------------------------------------------


def test_queue_pause_line_with_and_without_end() -> None:
    line = queue_pause_line({"paused_at": NOW - 300, "by_pid": 42, "reason": "demo",
                             "until": NOW + 600, "fault": False}, NOW)
    assert "pid 42" in line and "5m" in line and "10m" in line and "demo" in line
    endless = queue_pause_line({"paused_at": NOW, "by_pid": 42, "until": None}, NOW)
    assert "NO END" in endless and "qex resume queue" in endless
    fault = queue_pause_line({"paused_at": NOW, "fault": True, "reason": "bad json"}, NOW)
    assert "FAULT" in fault and "bad json" in fault


def test_lock_pause_line_names_the_holder() -> None:
    entry = {"name": "gpu0", "record": {"paused_at": NOW, "by_pid": 7}, "held_by": "abcd1234 (t)"}
    assert "abcd1234 (t) still holds it" in lock_pause_line(entry, NOW)
    entry["held_by"] = None
    assert "yours now" in lock_pause_line(entry, NOW)
    assert pause_lines(None, NOW) == []
    assert len(pause_lines({"queue": None, "locks": [entry]}, NOW)) == 1


def _info(**fields: Any) -> dict[str, Any]:
    info: dict[str, Any] = {"queue_state": "running", "jobs_queued": 0,
                            "health": {"last_start_at": NOW - 60, "head_job": None}}
    info.update(fields)
    return info


def test_health_line_verdicts() -> None:
    assert "healthy" in health_line(_info(), NOW)
    waiting_deps = health_line(_info(jobs_queued=2), NOW)
    assert "healthy" in waiting_deps and "none for capacity" in waiting_deps
    peer = _info(jobs_queued=1, queue_state="waits-for-peer",
                 health={"last_start_at": NOW - 99999, "head_job": "abcd (x)"})
    assert health_line(peer, NOW).startswith("queue: healthy")
    stuck = _info(jobs_queued=1, queue_state="held",
                  health={"last_start_at": NOW - 99999, "head_job": "abcd (x)",
                          "head_passed_by": 2})
    line = health_line(stuck, NOW)
    assert line.startswith("queue: STUCK") and "abcd (x)" in line and "2 job(s)" in line
    recent = _info(jobs_queued=1, queue_state="waits-for-capacity",
                   health={"last_start_at": NOW - 10, "head_job": "abcd (x)"})
    assert health_line(recent, NOW).startswith("queue: healthy")
    paused = _info(queue_state="paused", queue_line="queue paused since 10:00:00")
    assert health_line(paused, NOW) == "queue paused since 10:00:00"


# --- filters ----------------------------------------------------------------------------


def test_directory_filters() -> None:
    r = rec(cwd="/a/b")
    assert jf.in_dir(r, "/a/b", below=False)
    assert not jf.in_dir(r, "/a", below=False)
    assert jf.in_dir(r, "/a", below=True)
    assert not jf.in_dir(rec(cwd="/ab"), "/a", below=True)
    assert jf.in_dir(r, "/", below=True)


def test_tags_states_and_groups() -> None:
    r = rec(tags=["ml", "gpu"], group="9999aaaa-0000-4000-8000-000000000000", group_name="ci")
    assert jf.has_tags(r, ["ml"]) and jf.has_tags(r, ["ml", "gpu"])
    assert not jf.has_tags(r, ["web"])
    assert jf.groups_named([r], "ci") and jf.groups_named([r], "9999")
    assert not jf.groups_named([r], "cd")
    assert jf.names_something([r], "build") and jf.names_something([r], "0123")
    assert not jf.names_something([r], "done")
    assert jf.is_final(rec(state="failed")) and not jf.is_final(rec(state="running"))
    assert {s.value for s in FINAL} >= {"completed", "skipped"}


def test_held_ids_follow_needs_chains_and_groups() -> None:
    a = rec(id="a", state="failed")
    b = rec(id="b", state="completed", needs=["a"])
    c = rec(id="c", state="queued", after=["b"])
    lone = rec(id="d", state="completed")
    g1 = rec(id="e", state="completed", group="G")
    g2 = rec(id="f", state="running", group="G")
    held = jf.held_ids([a, b, c, lone, g1, g2])
    assert held == {"b": "c", "a": "c", "e": "f"}
