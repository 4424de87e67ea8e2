"""One definition of the protocol: every request has its builder, its answer, a handler in
the coordinator and a method in the client, and the two sides agree on the names."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest

from qex.client.connection import Connection, Refused, Unreachable, check
from qex.core import protocol
from qex.core.protocol import ANSWERS, OPS, Op, Result


def names(holder: type) -> dict[str, str]:
    return {k: v for k, v in vars(holder).items() if k.isupper() and isinstance(v, str)}


def test_every_op_has_an_answer_and_a_builder() -> None:
    assert set(names(Op).values()) == set(OPS) == set(ANSWERS)
    assert set(ANSWERS.values()) <= set(names(Result).values())
    for op in OPS:
        builder = getattr(protocol, "list_jobs" if op == Op.LIST else op)
        assert callable(builder), op


def test_builders_spell_each_request() -> None:
    assert protocol.status("x") == {"op": "status", "id": "x"}
    assert protocol.kill("x", 15, 2.0) == {"op": "kill", "id": "x", "signal": 15,
                                          "grace_secs": 2.0}
    assert protocol.pause({"kind": "queue"}, reason=None, until=None, by_pid=1, drain=False)[
        "op"] == "pause"
    assert json.loads(protocol.encode(protocol.job_changed("j"))) == {"op": "job_changed",
                                                                       "id": "j"}


def test_the_coordinator_handles_every_op() -> None:
    from qex.coordinator.server import Server

    server = Server(cast(Any, None))
    handled = set(server._handlers) | {Op.EVENTS}  # events takes over the line
    assert handled == set(OPS)


def test_the_client_has_a_method_for_every_op() -> None:
    method = {Op.LIST: "list_jobs", Op.WAIT: "send_wait", Op.EVENTS: "events"}
    # A supervisor's note; the fast path's requests, which only `qex.cli.wire` speaks.
    wire_only = (Op.JOB_CHANGED, Op.SUBMIT_WORDS, Op.SUBMIT_PIPELINE, Op.LIST_JSON,
                 Op.LIST_TABLE, Op.RERUN, Op.COMPLETE)
    missing = [op for op in OPS if op not in wire_only
               and not callable(getattr(Connection, method.get(op, op), None))]
    assert missing == []


def test_an_unknown_request_is_told_from_every_other_error() -> None:
    # A command that meets it does the work the older way, so no other refusal may match.
    assert protocol.unknown_request(protocol.unknown("rerun"))
    assert not protocol.unknown_request(protocol.error(protocol.INTERNAL, "no room"))
    assert not protocol.unknown_request(protocol.answer(protocol.Result.SUBMITTED, id="x"))
    assert protocol.rerun("x", environ={}, client_version="1")["op"] == Op.RERUN


def test_check_raises_what_happened() -> None:
    check(protocol.ping(), protocol.ok())
    with pytest.raises(Refused) as refused:
        check(protocol.status("x"), protocol.error(protocol.NO_SUCH_JOB, "no such job"))
    assert refused.value.kind == protocol.NO_SUCH_JOB
    with pytest.raises(Unreachable, match="different qex"):
        check(protocol.status("x"), protocol.answer(Result.JOBS, jobs=[]))
    assert protocol.error_of(protocol.answer(Result.ERROR)) == (
        protocol.INTERNAL, "the coordinator gave no reason")


def test_submitted_is_checked_once() -> None:
    answer = protocol.answer(Result.SUBMITTED, id="j1", warning="w", deduplicated=1)
    assert protocol.submitted(answer) == {"id": "j1", "warning": "w", "deduplicated": True}
    assert protocol.submitted(protocol.answer(Result.SUBMITTED, id="j1", warning=3)) == {
        "id": "j1", "warning": None, "deduplicated": False}
    assert protocol.submitted(protocol.answer(Result.SUBMITTED, id="")) is None
    assert protocol.submitted(protocol.answer(Result.SUBMITTED)) is None


def test_the_lines_are_those_json_writes_and_reads() -> None:
    message = {"op": Op.SUBMIT_WORDS, "options": {"command": ["echo", "é\u2603"]}, "n": 1.5}
    assert protocol.encode(message) == json.dumps(message, separators=(",", ":")).encode() + b"\n"
    assert protocol.decode(protocol.encode(message)) == message
    with pytest.raises(protocol.ProtocolError, match="the line is not JSON: Expecting value"):
        protocol.decode(b"nope")
    with pytest.raises(protocol.ProtocolError, match="not a JSON object"):
        protocol.decode(b"[1]")
    with pytest.raises(protocol.ProtocolError, match="nests its values deeper"):
        protocol.decode(b"[" * 100_000)


def test_the_protocol_module_imports_no_typing_json_re_or_enum() -> None:
    """`qex submit` builds its request with this module on every call; these four cost more
    than the interpreter's own start-up together."""
    import os
    import subprocess
    import sys

    import qex

    root = os.path.dirname(os.path.dirname(qex.__file__))
    code = (f"import sys; sys.path.insert(0, {root!r}); import qex.core.protocol, qex.cli.fastsubmit, qex.cli.wire; "
            "print(sorted({'typing', 'json', 're', 'enum'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(("answer", "expected"), [
    ({"result": "ok", "answers": [{"result": "ok"},
                                  {"result": "error", "kind": "wrong_state", "message": "m"}]},
     [{"result": "ok"}, {"result": "error", "kind": "wrong_state", "message": "m"}]),
    (protocol.unknown(Op.CANCEL_MANY), None),
])
def test_cancel_many_gives_each_answer_or_none_from_an_older_coordinator(
        answer: dict[str, Any], expected: Any) -> None:
    conn = object.__new__(Connection)
    sent: list[dict[str, Any]] = []
    conn.request = lambda message, timeout=None: (sent.append(message), answer)[1]  # type: ignore[method-assign]
    assert conn.cancel_many(["a", "b"]) == expected
    assert sent == [{"op": "cancel_many", "ids": ["a", "b"]}]


@pytest.mark.parametrize("answer", [
    {"result": "ok"}, {"result": "ok", "answers": [{"result": "ok"}]},
    {"result": "ok", "answers": [{"result": "ok"}, {"result": "status"}]},
    {"result": "ok", "answers": "no"},
])
def test_a_cancel_many_answer_that_misses_answers_is_a_different_qex(
        answer: dict[str, Any]) -> None:
    conn = object.__new__(Connection)
    conn.request = lambda message, timeout=None: answer  # type: ignore[method-assign]
    with pytest.raises(Unreachable, match="different qex"):
        conn.cancel_many(["a", "b"])
    with pytest.raises(Refused):
        conn.request = lambda message, timeout=None: protocol.error(  # type: ignore[method-assign]
            protocol.REFUSED, "no ids")
        conn.cancel_many(["a", "b"])
