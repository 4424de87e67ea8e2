"""`list_json`: the coordinator's ready document for `qex list --json`, and the wire's reading
of an answer line followed by text."""

from __future__ import annotations

import json
import socket
import threading
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

from qex.cli.wire import Wire
from qex.coordinator import listing
from qex.core import protocol
from qex.core.jsontext import dumps
from qex.core.record_json import display_record, sort_key


def _expected(records: list[dict[str, object]]) -> bytes:
    """What the full body prints: the records in submission order, each made safe to show."""
    return dumps([display_record(r) for r in records]).encode("ascii")


def test_the_document_is_the_listing_the_full_body_prints(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    late = add_job(coord, submitted_at=20.0, name="late\x1bjob")
    early = add_job(coord, submitted_at=10.0, state="failed", error="bad\nline", exit_code=3)
    answer, document = listing.handle_list_json(coord)
    assert answer == {"result": "jobs_json", "size": len(document),
                      "pauses": {"queue": None, "locks": []}}
    assert document == _expected([early.record.to_dict(), late.record.to_dict()])
    assert json.loads(document)[1]["name"] == "late_job"  # safe form, as `display_record`


def test_a_changed_record_is_shown_changed(tmp_path: Path) -> None:
    """The text kept per job is remade whenever the record differs from its copy, also for
    a change inside a nested field and for a field set on the record in place."""
    coord = make_coord(tmp_path)
    job = add_job(coord, submitted_at=1.0)
    first = listing.handle_list_json(coord)[1]
    assert listing.handle_list_json(coord)[1] == first  # unchanged: the same text
    job.record.blocked_reason = "waiting for the lock `db`"
    second = listing.handle_list_json(coord)[1]
    assert second == _expected([job.record.to_dict()]) != first
    job.record.assigned["gpu"] = {"units": 1, "devices": [0], "size": None}
    third = listing.handle_list_json(coord)[1]
    assert json.loads(third)[0]["assigned"] == {"gpu": {"units": 1, "devices": [0], "size": None}}
    job.record.assigned["gpu"]["devices"].append(1)
    assert json.loads(listing.handle_list_json(coord)[1])[0]["assigned"]["gpu"]["devices"] == [0, 1]
    assert listing.handle_list_json(coord)[1] == _expected([job.record.to_dict()])


def test_an_empty_listing_and_a_damaged_entry(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    answer, document = listing.handle_list_json(coord)
    assert (answer["size"], document) == (2, b"[]") and "damaged" not in answer
    broken = coord.paths.jobs_dir / "broken"
    broken.mkdir()
    coord.damaged["broken"] = str(broken / "status.json")
    answer, _ = listing.handle_list_json(coord)
    assert answer["damaged"] == [{"id": "broken", "path": str(broken / "status.json")}]


def _serve(reply: bytes) -> Wire:
    """A wire whose other end reads one request and sends `reply` in small pieces."""
    ours, theirs = socket.socketpair()

    def answer() -> None:
        theirs.recv(1 << 16)
        for start in range(0, len(reply), 7):
            theirs.sendall(reply[start:start + 7])
        theirs.close()

    threading.Thread(target=answer, daemon=True).start()
    return Wire(ours)


def test_the_wire_reads_the_text_that_follows_the_line() -> None:
    text = b'[\n  {\n    "id": "x"\n  }\n]'
    line = json.dumps({"result": "jobs_json", "size": len(text)}).encode() + b"\n"
    wire = _serve(line + text)
    try:
        assert wire.request_text({"op": "list_json"}) == (
            {"result": "jobs_json", "size": len(text)}, text)
    finally:
        wire.close()


@pytest.mark.parametrize("reply", [
    b'{"result": "jobs_json", "size": 10}\n[1, 2]',  # the text ends early
    b'{"result": "jobs_json", "size": 2',  # no whole line
    b'not json\n',
])
def test_the_wire_gives_up_on_an_answer_it_cannot_trust(reply: bytes) -> None:
    wire = _serve(reply)
    try:
        assert wire.request_text({"op": "list_json"}) is None
    finally:
        wire.close()


def test_an_older_coordinator_refuses_the_request_in_one_line() -> None:
    refusal = {"result": "error", "kind": "internal", "message": "unknown request"}
    wire = _serve(json.dumps(refusal).encode() + b"\n")
    try:
        assert wire.request_text({"op": "list_json"}) == (refusal, b"")
    finally:
        wire.close()


def test_the_fast_list_asks_an_older_coordinator_for_the_records(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A coordinator that does not know `list_json` refuses it; the fast path then lists the
    records itself, as it did before, and prints the same document."""
    from qex.cli import fastread

    record = {"id": "a", "name": "x\x1b", "submitted_at": 1.0, "state": "queued"}
    refusal = ({"result": "error", "kind": "internal", "message": "unknown request"}, b"")
    wire = AnsweringWire({"list_json": refusal, "list": {"result": "jobs", "jobs": [record]},
                      "capabilities": {"result": "capabilities", "names": []}})
    monkeypatch.setattr(fastread, "_connect", lambda word=None: wire)
    assert fastread.list_json() == 0
    assert wire.asked == ["list_json", "list", "capabilities"]
    assert capsys.readouterr().out == dumps([display_record(record)]) + "\n"


def test_the_fast_list_prints_the_coordinator_document(
        monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    from qex.cli import fastread

    wire = AnsweringWire({"list_json": ({"result": "jobs_json", "size": 2}, b"[]"),
                      "capabilities": {"result": "capabilities", "names": []}})
    monkeypatch.setattr(fastread, "_connect", lambda word=None: wire)
    assert fastread.list_json() == 0
    assert wire.asked == ["list_json", "capabilities"]
    assert capsysbinary.readouterr().out == b"[]\n"


@pytest.mark.parametrize("message", FILTER_CASES)
def test_the_coordinator_chooses_the_records_as_the_command_would(
        tmp_path: Path, message: dict[str, Any]) -> None:
    from qex.core.job_filters import chosen_jobs

    coord = make_coord(tmp_path)
    add_grouped_jobs(coord, 1000.0)
    records = sorted((job.record.to_dict() for job in coord.jobs.values()), key=sort_key)
    expected = chosen_jobs(records, **{FILTER_KEYWORDS[k]: v for k, v in message.items()})
    answer, document = listing.handle_list_json(coord, {"op": "list_json", **message})
    assert answer["filtered"] is True
    assert document == _expected(expected)
    whole, _ = listing.handle_list_json(coord, {"op": "list_json"})
    assert "filtered" not in whole


def test_the_filtered_records_refuse_a_missing_group_and_carry_the_pauses(
        tmp_path: Path) -> None:
    from qex.coordinator import pausing

    coord = make_coord(tmp_path)
    add_grouped_jobs(coord, 1000.0)
    refused, text = listing.handle_list_json(coord, {"op": "list_json", "group": "nope"})
    assert (refused["result"], refused["kind"], text) == ("error", "no_such_job", b"")
    wrong, _ = listing.handle_list_json(coord, {"op": "list_json", "states": "queued"})
    assert wrong["result"] == "error" and "states" in wrong["message"]
    answer, _ = listing.handle_list_json(coord, {"op": "list_json", "group": "fan"})
    assert answer["pauses"] == {key: pausing.state_answer(coord)[key]
                                for key in ("queue", "locks")}


def test_the_fast_filtered_json_prints_the_coordinator_choice_in_one_request(
        monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes],
        tmp_path: Path) -> None:
    from qex.cli import fastread

    sent: list[dict[str, Any]] = []
    text = b'[\n  {\n    "id": "x"\n  }\n]'

    class Recording(AnsweringWire):
        def request_text(self, message: dict[str, Any]) -> object:
            sent.append(message)
            return super().request_text(message)

    wire = Recording({"list_json": ({"result": "jobs_json", "size": len(text), "filtered": True,
                                     "pauses": {"queue": None, "locks": []}}, text)})
    monkeypatch.setattr(fastread, "_connect", lambda word=None: wire)
    monkeypatch.chdir(tmp_path)
    assert fastread.list_filtered(as_json=True, states={"failed", "queued"}, tags=(),
                                  group_word=None, cwd_dir=None, under_dir=".") == 0
    assert sent == [protocol.list_json(states=["failed", "queued"], under=str(tmp_path))]
    assert capsysbinary.readouterr() == (text + b"\n", b"")


def test_the_fast_filtered_json_filters_what_an_older_coordinator_sends(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A coordinator that knows `list_json` but not its filters sends every record and no
    `filtered`: the command filters them itself and asks for the pauses as before."""
    from qex.cli import fastread

    kept = {"id": "a" * 8, "name": "x", "submitted_at": 1.0, "state": "failed", "tags": ["t"]}
    other = {"id": "b" * 8, "name": "y", "submitted_at": 2.0, "state": "failed", "tags": []}
    document = dumps([kept, other]).encode()
    wire = AnsweringWire({"list_json": ({"result": "jobs_json", "size": len(document)},
                                        document),
                          "capabilities": {"result": "capabilities", "names": []}})
    monkeypatch.setattr(fastread, "_connect", lambda word=None: wire)
    assert fastread.list_filtered(as_json=True, states=set(), tags=("t",), group_word=None,
                                  cwd_dir=None, under_dir=None) == 0
    assert wire.asked == ["list_json", "capabilities"]
    assert capsys.readouterr().out == dumps([display_record(kept)]) + "\n"
    missing = ({"result": "error", "kind": "no_such_job", "message": "no group"}, b"")
    wire = AnsweringWire({"list_json": missing})
    monkeypatch.setattr(fastread, "_connect", lambda word=None: wire)
    assert fastread.list_filtered(as_json=True, states=set(), tags=(), group_word="nope",
                                  cwd_dir=None, under_dir=None) is None
    assert wire.asked == ["list_json"]


def test_the_fast_list_takes_the_pauses_from_the_answer(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from qex.cli import fastread

    paused = {"queue": {"at": 1.0, "by_pid": 7, "reason": "upgrade"}, "locks": []}
    wire = AnsweringWire({"list_json": ({"result": "jobs_json", "size": 2, "pauses": paused},
                                        b"[]")})
    monkeypatch.setattr(fastread, "_connect", lambda word=None: wire)
    assert fastread.list_json() == 0
    assert wire.asked == ["list_json"]
    out, err = capsys.readouterr()
    assert out == "[]\n" and "queue paused" in err and "upgrade" in err
