"""`list_table`: the coordinator makes the rows of `qex list`, and the command lays them out
exactly as it lays out a table of the records it would otherwise receive."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from coordkit import (
    FILTER_CASES,
    FILTER_KEYWORDS,
    AnsweringWire,
    add_grouped_jobs,
    add_job,
    make_coord,
)

from qex.cli.render_table import render_jobs, render_rows, rows_table_lines
from qex.coordinator import listing
from qex.coordinator.state import Coordinator
from qex.core import protocol
from qex.core.record_json import sort_key
from qex.core.record_view import pool_use_lines

NOW = 1_000_000.0


def _table(coord: Coordinator) -> tuple[dict[str, Any], list[list[str]]]:
    answer, document = listing.handle_list_table(coord)
    assert answer["size"] == len(document)
    return answer, json.loads(document)


def _records(coord: Coordinator) -> list[dict[str, Any]]:
    return sorted((job.record.to_dict() for job in coord.jobs.values()), key=sort_key)


def _varied(coord: Coordinator) -> None:
    add_job(coord, submitted_at=NOW - 30, name="waits\x1bhere", blocked_reason="waits for `db`")
    add_job(coord, state="running", submitted_at=NOW - 20, started_at=NOW - 12, pid=None,
            assigned={"gpu": {"units": 2, "devices": [0, 1], "size": None}})
    add_job(coord, state="failed", submitted_at=NOW - 10, started_at=NOW - 9,
            finished_at=NOW - 4, signal=9, error="bad\nline")
    add_job(coord, state="completed", submitted_at=NOW - 8, started_at=NOW - 8,
            finished_at=NOW - 1, exit_code=0, forced=True, forced_reason="by hand",
            engine="slurm", engine_id="4711")


@pytest.mark.parametrize("width", [None, 60, 200])
def test_the_rows_lay_out_as_the_records_do(tmp_path: Path, width: int | None) -> None:
    coord = make_coord(tmp_path)
    coord.now = lambda: NOW  # type: ignore[method-assign]
    _varied(coord)
    answer, rows = _table(coord)
    records = _records(coord)
    assert render_rows(rows, width=width, color=True) == render_jobs(
        records, now=NOW, width=width, color=True)
    assert answer["pools"] == pool_use_lines(records) == [
        "pool gpu: 2 unit(s) held by 1 job(s), devices 0,1"]
    assert answer["pauses"] == {"queue": None, "locks": []}
    assert "waits_here" in rows[0][2] and rows[3][0].endswith(" slurm:4711")


def _cells_of_records(coord: Coordinator, now: float) -> list[list[str]]:
    from qex.core.record_view import row_cells

    return [list(row_cells(r, now)) for r in _records(coord)]


def test_a_queued_row_keeps_time_with_the_clock_and_a_changed_record_is_remade(
        tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    clock = [NOW]
    coord.now = lambda: clock[0]  # type: ignore[method-assign]
    queued = add_job(coord, submitted_at=NOW - 5)
    done = add_job(coord, state="completed", submitted_at=NOW - 9, started_at=NOW - 9,
                   finished_at=NOW - 7, exit_code=0)
    _, first = _table(coord)
    assert [row[5] for row in first] == ["2s", "5s"]
    clock[0] = NOW + 60
    _, later = _table(coord)
    assert [row[5] for row in later] == ["2s", "1m5s"]
    queued.record.blocked_reason = "waits for memory"
    done.record.exit_code = 3
    done.record.state = "failed"
    _, changed = _table(coord)
    assert changed[0][1:] == ["failed", "j", "1", "1KB", "2s", "exit 3"]
    assert changed[1][6] == "waits for memory"
    assert changed == _cells_of_records(coord, NOW + 60)


def test_the_list_json_item_and_the_row_share_what_the_job_keeps(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    job = add_job(coord, state="completed", submitted_at=1.0, started_at=1.0, finished_at=2.0)
    listing.handle_list_json(coord)
    kept = job.listed
    assert kept is not None and kept.item is not None and kept.cells is None
    listing.handle_list_table(coord)
    assert job.listed is kept and kept.row is not None
    job.record.name = "renamed"
    listing.handle_list_table(coord)
    assert job.listed is not kept and job.listed is not None and job.listed.item is None


def test_an_empty_table_and_the_pauses(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    answer, rows = _table(coord)
    assert rows == [] and rows_table_lines(rows, answer["pools"]) == ["no jobs"]
    broken = coord.paths.jobs_dir / "broken"
    broken.mkdir()
    coord.damaged["broken"] = str(broken / "status.json")
    assert _table(coord)[0]["damaged"] == [{"id": "broken", "path": str(broken / "status.json")}]


def _fast(monkeypatch: pytest.MonkeyPatch, answers: dict[str, object]) -> AnsweringWire:
    from qex.cli import fastread

    wire = AnsweringWire(answers)
    monkeypatch.setattr(fastread, "_connect", lambda word=None: wire)
    return wire


def test_the_fast_list_prints_the_coordinator_rows(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from qex.cli import fastread

    rows = [["1a2b3c4d", "running", "train", "2", "1.0GB", "5s", "holds gpu 0"]]
    text = json.dumps(rows).encode()
    paused = {"queue": {"at": NOW, "by_pid": 7, "reason": "upgrade"}, "locks": []}
    wire = _fast(monkeypatch, {"list_table": (
        {"result": "jobs_table", "size": len(text), "pools": ["pool gpu: 1 unit(s) held by 1 job(s)"],
         "pauses": paused}, text)})
    assert fastread.list_text() == 0
    assert wire.asked == ["list_table"]
    out, err = capsys.readouterr()
    assert out.splitlines() == [*render_rows(rows), "pool gpu: 1 unit(s) held by 1 job(s)"]
    assert "queue paused" in err and "upgrade" in err


def test_the_fast_list_asks_an_older_coordinator_for_the_document(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from qex.cli import fastread

    record = {"id": "a" * 8 + "-0000", "name": "x", "submitted_at": NOW, "state": "queued"}
    document = json.dumps([record]).encode()
    refusal = ({"result": "error", "kind": "internal", "message": "unknown request"}, b"")
    wire = _fast(monkeypatch, {
        "list_table": refusal,
        "list_json": ({"result": "jobs_json", "size": len(document)}, document),
        "capabilities": {"result": "capabilities", "names": []}})
    assert fastread.list_text() == 0
    assert wire.asked == ["list_table", "list_json", "capabilities"]
    assert capsys.readouterr().out.splitlines()[1].startswith("aaaaaaaa  queued  x")


@pytest.mark.parametrize("document", [b'[["too", "few"]]', b'[[1, 2, 3, 4, 5, 6, 7]]', b'{}'])
def test_rows_of_an_unknown_shape_go_to_the_full_body(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        document: bytes) -> None:
    from qex.cli import fastread

    _fast(monkeypatch, {"list_table": (
        {"result": "jobs_table", "size": len(document), "pools": []}, document)})
    assert fastread.list_text() is None
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("message", FILTER_CASES)
def test_the_coordinator_chooses_the_rows_as_the_command_would(
        tmp_path: Path, message: dict[str, Any]) -> None:
    from qex.core.job_filters import chosen_jobs
    from qex.core.record_view import row_cells

    coord = make_coord(tmp_path)
    coord.now = lambda: NOW  # type: ignore[method-assign]
    add_grouped_jobs(coord, NOW)
    expected = chosen_jobs(_records(coord),
                           **{FILTER_KEYWORDS[k]: v for k, v in message.items()})
    answer, document = listing.handle_list_table(coord, {"op": "list_table", **message})
    assert json.loads(document) == [list(row_cells(r, NOW)) for r in expected]
    assert "groups" not in answer


def test_a_group_word_for_several_groups_or_none(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    add_grouped_jobs(coord, NOW)
    answer, document = listing.handle_list_table(coord, {"op": "list_table", "group": "fan"})
    assert len(json.loads(document)) == 2
    assert answer["groups"] == ["g1" * 8, "g2" * 8] and answer["group"] == "fan"
    refused, text = listing.handle_list_table(coord, {"op": "list_table", "group": "nope"})
    assert (refused["result"], refused["kind"], text) == ("error", "no_such_job", b"")
    wrong, _ = listing.handle_list_table(coord, {"op": "list_table", "tags": "nightly"})
    assert wrong["result"] == "error" and "tags" in wrong["message"]


def test_the_fast_filtered_list_sends_its_filters_resolved(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    from qex.cli import fastread

    sent: list[dict[str, Any]] = []
    rows = [["1a2b3c4d", "queued", "x", "1", "-", "1s", ""]]
    text = json.dumps(rows).encode()

    class Recording(AnsweringWire):
        def request_text(self, message: dict[str, Any]) -> object:
            sent.append(message)
            return super().request_text(message)

    wire = Recording({"list_table": ({"result": "jobs_table", "size": len(text), "pools": [],
                                      "groups": ["a", "b"], "group": "fan"}, text)})
    monkeypatch.setattr(fastread, "_connect", lambda word=None: wire)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.chdir(tmp_path / "link")
    assert fastread.list_filtered(as_json=False, states={"queued"}, tags=("t",),
                                  group_word="fan", cwd_dir=".", under_dir=None) == 0
    assert sent == [{"op": "list_table", "states": ["queued"], "tags": ["t"], "group": "fan",
                     "cwd": str(tmp_path / "real")}]
    # The fast path spells the request itself; the builder of the protocol agrees with it.
    assert sent == [protocol.list_table(states=["queued"], tags=["t"], group="fan",
                                        cwd=str(tmp_path / "real"))]
    out, err = capsys.readouterr()
    assert out.splitlines() == render_rows(rows)
    assert "`fan` names 2 groups" in err


def test_the_fast_filtered_list_of_no_group_or_an_older_coordinator(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from qex.cli import fastread

    missing = ({"result": "error", "kind": "no_such_job", "message": "no group"}, b"")
    _fast(monkeypatch, {"list_table": missing})
    assert fastread.list_filtered(as_json=False, states=set(), tags=(), group_word="nope",
                                  cwd_dir=None, under_dir=None) is None
    record = {"id": "b" * 8 + "-0000", "name": "y", "submitted_at": NOW, "state": "failed",
              "tags": ["t"]}
    document = json.dumps([record, {**record, "id": "c" * 8, "tags": []}]).encode()
    refusal = ({"result": "error", "kind": "internal",
                "message": "unknown request `list_table`"}, b"")
    wire = _fast(monkeypatch, {
        "list_table": refusal,
        "list_json": ({"result": "jobs_json", "size": len(document)}, document),
        "capabilities": {"result": "capabilities", "names": []}})
    assert fastread.list_filtered(as_json=False, states=set(), tags=("t",), group_word=None,
                                  cwd_dir=None, under_dir=None) == 0
    assert wire.asked == ["list_table", "list_json", "capabilities"]
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[1].startswith("bbbbbbbb  failed")
