"""What `qex.cli.fastread` repeats to stay off heavy imports agrees with its source."""

from __future__ import annotations

from typing import Any

import pytest

from qex.cli import fastread
from qex.core import protocol
from qex.core.states import FINAL


def test_final_states_are_the_states_final() -> None:
    assert {s.value for s in FINAL} == fastread.FINAL_STATES


@pytest.mark.parametrize("answer", [
    {"result": "error", "kind": "wrong_state", "message": "it stopped"},
    {"result": "error"}, {"result": "error", "kind": "", "message": ""},
    {"result": "error", "kind": 3, "message": None}, {"result": "ok"}, {},
])
def test_refusals_read_as_the_protocol_reads_them(answer: dict[str, Any]) -> None:
    assert fastread.refusal_of(answer) == protocol.error_of(answer)


def test_the_requests_are_the_protocol_requests() -> None:
    """The lines fastread sends, spelled as `qex.core.protocol` spells them."""
    assert protocol.status("x") == {"op": "status", "id": "x"}
    assert protocol.list_jobs() == {"op": "list"}
    assert protocol.list_jobs("1a2b") == {"op": "list", "word": "1a2b"}  # `_by_word`
    assert protocol.list_json() == {"op": "list_json"}
    assert protocol.capabilities() == {"op": "capabilities"}
    assert protocol.pause_state() == {"op": "pause_state"}
    assert protocol.cancel("x") == {"op": "cancel", "id": "x"}
    assert protocol.kill(
        "x", 15, 10.0) == {"op": "kill", "id": "x", "signal": 15, "grace_secs": 10.0}
    assert (protocol.ANSWERS["status"], protocol.ANSWERS["list"],
            protocol.ANSWERS["kill"], protocol.ANSWERS["cancel"],
            protocol.ANSWERS["pause_state"]) == ("status", "jobs", "ok", "ok", "pause_state")
    assert protocol.ANSWERS["list_json"] == "jobs_json"


# -- `stop`: several words, each job once, the first refusal's code ---------------------------

IDS = ["01234567-89ab-4def-8123-456789abcdef", "01334567-89ab-4def-8123-456789abcdef",
       "21234567-89ab-4def-8123-456789abcdef"]
#: A job that has stopped: the coordinator refuses to stop it again.
DONE = IDS[2]


class _Wire:
    """A coordinator that knows the jobs of `IDS` and records every request."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        #: False: a coordinator older than `cancel_many`.
        self.knows_many = True

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        self.sent.append(message)
        op, word = message["op"], message.get("id") or message.get("word")
        if op == "cancel_many":
            if not self.knows_many:
                return protocol.unknown(op)
            return {"result": "ok", "answers": [self._stop(one) for one in message["ids"]]}
        if op == "status":
            return ({"result": "status", "status": {"id": word, "state": "queued"}}
                    if word in IDS else {"result": "error", "kind": "no_such_job"})
        if op == "list":
            jobs = [{"id": i, "state": "queued"} for i in IDS if i.startswith(str(word))]
            return {"result": "jobs", "jobs": jobs}
        return self._stop(word)

    @staticmethod
    def _stop(job_id: object) -> dict[str, Any]:
        if job_id == DONE:
            return {"result": "error", "kind": "wrong_state", "message": "it had stopped"}
        return {"result": "ok"}

    def close(self) -> None:
        pass


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> _Wire:
    fake = _Wire()
    monkeypatch.setattr(fastread, "_connect", lambda: fake)
    return fake


def test_several_words_stop_each_job_once_in_order(wire: _Wire,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code = fastread.stop([IDS[1], DONE, IDS[0][:8], IDS[1][:10]], "kill", (9, 0.0))
    assert code == 1  # the refusal of the stopped job, in a command outside the band
    stops = [m for m in wire.sent if m["op"] == "kill"]
    assert stops == [{"op": "kill", "id": job, "signal": 9, "grace_secs": 0.0}
                     for job in (IDS[1], DONE, IDS[0])]
    shown = capsys.readouterr()
    assert shown.out == f"{IDS[1]} received the signal SIGKILL\n" \
                        f"{IDS[0]} received the signal SIGKILL\n"
    assert shown.err == "qex: it had stopped\n"


def test_a_word_for_the_full_body_stops_nothing(wire: _Wire,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A word that names no job, several, or that may be a name, hands the command over
    before any stop is sent."""
    for words in ([IDS[0], "ffffffff"], [IDS[0], "01"], [IDS[2], "Job"]):
        wire.sent.clear()
        assert fastread.stop(words, "cancel") is None
        assert all(m["op"] in ("status", "list") for m in wire.sent), words
    assert capsys.readouterr() == ("", "")


def test_cancels_say_that_the_jobs_left_the_queue(wire: _Wire,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert fastread.stop([IDS[0], IDS[1]], "cancel") == 0
    assert capsys.readouterr().out == f"{IDS[0]} left the queue\n{IDS[1]} left the queue\n"
    stops = [m for m in wire.sent if m["op"] not in ("status", "list")]
    assert stops == [protocol.cancel_many([IDS[0], IDS[1]])]  # one request for both


@pytest.mark.parametrize("knows_many", [True, False])
def test_several_cancels_answer_in_order_with_the_first_refusal_s_code(
        wire: _Wire, capsys: pytest.CaptureFixture[str], knows_many: bool) -> None:
    """Each job's line or refusal in the order named, from one `cancel_many` request or,
    from a coordinator older than it, from a `cancel` per job."""
    wire.knows_many = knows_many
    assert fastread.stop([IDS[1], DONE, IDS[0]], "cancel") == 1
    shown = capsys.readouterr()
    assert shown.out == f"{IDS[1]} left the queue\n{IDS[0]} left the queue\n"
    assert shown.err == "qex: it had stopped\n"
    stops = [m for m in wire.sent if m["op"] not in ("status", "list")]
    many = protocol.cancel_many([IDS[1], DONE, IDS[0]])
    assert stops == ([many] if knows_many else
                     [many, *(protocol.cancel(job) for job in (IDS[1], DONE, IDS[0]))])


def test_a_cancel_many_answer_without_each_answer_is_a_different_qex(
        wire: _Wire, monkeypatch: pytest.MonkeyPatch) -> None:
    from qex.client.errors import Unreachable

    monkeypatch.setattr(wire, "_stop", lambda _job: {"result": "status"})
    with pytest.raises(Unreachable, match="different qex"):
        fastread.stop([IDS[0], IDS[1]], "cancel")


class _SlowWire:
    """A coordinator whose first answer does not come at once: `request` hands the line to
    the full client (here a stand-in that is closed) and the wire can send nothing more."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.closed = False

    def request(self, message: dict[str, Any]) -> Any:
        assert not self.sent, "a request on a line that the full client has taken"
        self.sent.append(message)
        return self

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize("word", [IDS[0], "01234567", "build"])
def test_a_slow_answer_leaves_the_word_to_the_full_body(word: str) -> None:
    slow = _SlowWire()
    assert fastread.word_jobs(slow, word) is None  # type: ignore[arg-type]
    assert slow.closed and len(slow.sent) == 1


def test_a_whole_id_that_is_no_job_is_looked_up_as_a_group(wire: _Wire) -> None:
    """`status` refuses a group's id (no such job); the look-up then asks `list`, and the
    group's stages answer (here the fake coordinator has none, so nothing is found)."""
    group = "99999999-0000-4000-8000-000000000001"
    assert fastread.word_jobs(wire, group) is None  # type: ignore[arg-type]
    assert [m["op"] for m in wire.sent] == ["status", "list"]
