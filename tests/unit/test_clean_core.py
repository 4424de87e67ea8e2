"""`qex.cli.clean_core`: the selection that both bodies of `qex clean` share reads its words
as the typed modules read them, and the wire body's deletion request reads its answers as
the full client reads them, or hands over with nothing deleted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qex.cli import clean_core, reach
from qex.client.errors import Refused
from qex.core import protocol
from qex.core.states import FINAL, parse_state_filter
from qex.core.units import UnitError, parse_duration
from qex.store.tree_size import tree_bytes

STATE_WORDS = ["done", "failed", "completed", "active", "oom", "Killed", " done ", "bogus",
               "", "queued", "finished", "terminal", "x"]
AGES = ["1h", "30s", "2d", "0", "none", "never", "1h30m", " 5m ", "soon", "-1", "1h30",
        "99999999d", "", "7"]


def _choose(words: list[str], states: list[str], older_than: str | None = None,
            **flags: Any) -> clean_core.Choice:
    return clean_core.choose(words, all_jobs=flags.get("all_jobs", False), states=states,
                             older_than=older_than, cwd_dir=flags.get("cwd_dir"),
                             under_dir=flags.get("under_dir"), auto=flags.get("auto", False))


@given(st.lists(st.sampled_from(STATE_WORDS), max_size=3),
       st.lists(st.sampled_from(STATE_WORDS), max_size=3))
def test_states_are_selected_as_the_typed_filter_selects_them(words: list[str],
                                                               states: list[str]) -> None:
    """Words and `--state` values: the states that `parse_state_filter` gives, a state
    word among the words counted as one, and any other word left as a job's."""
    try:
        expected = set().union(*[parse_state_filter(s) for s in states])
    except ValueError as exc:
        with pytest.raises(clean_core.CleanUsage) as caught:
            _choose(words, states, all_jobs=True)
        assert (caught.value.message, caught.value.param_hint) == (str(exc), "--state")
        return
    typed = {word: _typed(word) for word in words}
    expected = expected.union(*[found for found in typed.values() if found is not None])
    choice = _choose(words, states, all_jobs=True)
    assert choice.wanted == {str(s) for s in expected}
    assert choice.state_words == [word for word in words if typed[word] is not None]
    assert choice.job_words == [word for word in words if typed[word] is None]


def _typed(word: str) -> frozenset[Any] | None:
    try:
        return parse_state_filter(word)
    except ValueError:
        return None


@pytest.mark.parametrize("text", AGES)
def test_an_age_is_read_as_the_units_read_it(text: str) -> None:
    """`--older-than`: the seconds of `parse_duration` (no limit: every age), or its
    sentence for the mistake, named by the option."""
    try:
        expected = parse_duration(text, what="age") or 0.0
    except UnitError as exc:
        with pytest.raises(clean_core.CleanUsage) as caught:
            _choose([], [], text)
        assert (caught.value.message, caught.value.param_hint) == (str(exc), "--older-than")
        return
    assert _choose([], [], text).age == expected


def test_auto_means_its_three_filters_and_takes_no_other() -> None:
    choice = _choose([], [], auto=True)
    assert (choice.wanted, choice.age, choice.under_dir) == (
        {str(s) for s in FINAL}, clean_core.AUTO_AGE, ".")
    assert _choose([], [], auto=True, under_dir="/w").under_dir == "/w"
    for flags in ({"all_jobs": True}, {"older_than": "1h"}):
        with pytest.raises(clean_core.CleanUsage) as caught:
            _choose([], ["done"] if not flags else [], auto=True, **flags)
        assert caught.value.param_hint is None
    with pytest.raises(clean_core.CleanUsage):
        _choose([], [])  # nothing said: nothing is selected by accident
    assert not _choose(["abc"], []).filtering


class _Wire:
    """Answers the requests it is sent from a list; records them."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers, self.sent = answers, []

    def request(self, message: dict[str, Any]) -> Any:
        self.sent.append(message)
        return self.answers.pop(0)


class _Slow:
    """The full client's connection that took over a slow answer."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer_of, self.closed = answer, False

    def answer(self, op: str) -> dict[str, Any]:
        assert op == "clean_many"
        return self.answer_of

    def close(self) -> None:
        self.closed = True


def test_the_deletions_are_one_request_read_as_the_client_reads_it() -> None:
    each = [{"result": "ok"}, {"result": "error", "kind": "wrong_state", "message": "held"},
            {"result": "error", "kind": "no_such_job", "message": "gone\x1b"}]
    wire = _Wire([{"result": "ok", "answers": each}])
    found = clean_core._cleaned_on_wire(wire, ["a", "b", "c"])
    assert wire.sent == [protocol.clean_many(["a", "b", "c"])]
    assert found is not None and found[0] is None

    class _Conn:  # the full client, as `reach.cleaned` uses it
        def clean_many(self, job_ids: list[str]) -> list[dict[str, Any]]:
            return each

    def shown(refusals: list[Refused | None]) -> list[tuple[str, str] | None]:
        return [None if r is None else (r.kind, r.message) for r in refusals]

    assert shown(found) == shown(reach.cleaned(_Conn(), ["a", "b", "c"]))  # type: ignore[arg-type]
    assert shown(found)[1:] == [("wrong_state", "held"), ("no_such_job", "gone ")]
    slow = _Slow({"result": "ok", "answers": each[:1]})
    found = clean_core._cleaned_on_wire(_Wire([slow]), ["a"])
    assert found == [None] and slow.closed


def test_an_older_coordinator_hands_the_deletions_over_and_a_fault_is_the_clients() -> None:
    unknown = {"result": "error", "kind": "bad_request",
               "message": f"{protocol.UNKNOWN_REQUEST} `clean_many`"}
    assert protocol.unknown_request(unknown)
    assert clean_core._cleaned_on_wire(_Wire([unknown]), ["a"]) is None  # nothing deleted
    with pytest.raises(Refused):
        clean_core._cleaned_on_wire(_Wire([{"result": "error", "kind": "internal",
                                            "message": "x"}]), ["a"])
    with pytest.raises(Exception, match="did not answer each"):
        clean_core._cleaned_on_wire(_Wire([{"result": "ok", "answers": []}]), ["a"])


def test_a_tree_is_the_bytes_of_its_files(tmp_path: Path) -> None:
    """What `qex clean` says it freed and `qex du` counts: each file once, a link as itself,
    nothing for a directory that is gone or a path that is a file."""
    job = tmp_path / "job"
    (job / "sub").mkdir(parents=True)
    (job / "a").write_bytes(b"x" * 10)
    (job / "sub" / "b").write_bytes(b"y" * 7)
    (job / "link").symlink_to(job / "a")
    assert tree_bytes(job) == tree_bytes(str(job)) == 17 + (job / "link").lstat().st_size
    assert tree_bytes(tmp_path / "gone") == 0
    (tmp_path / "file").write_text("z")
    assert tree_bytes(tmp_path / "file") == 0


def test_a_clean_by_state_asks_only_for_those_states(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """`--state failed` lists the failed jobs (and the active ones, which the coordinator
    adds), not every record; a state given as a word lists every record, since the word must
    not name a job; either way the answer is filtered here."""
    from qex.cli.wire import Wire

    failed = {"id": "f" * 8 + "-0000-4000-8000-000000000000", "name": "a", "state": "failed",
              "finished_at": 1.0, "cwd": "/"}
    running = {**failed, "id": "e" * 8 + "-0000-4000-8000-000000000000", "state": "running"}
    done = {**failed, "id": "d" * 8 + "-0000-4000-8000-000000000000", "state": "completed"}

    class _Coordinator:
        """Sends every record whatever the filter (as an older coordinator does), and
        deletes whatever it is asked to."""

        def __init__(self) -> None:
            self.sent: list[dict[str, Any]] = []

        def request(self, message: dict[str, Any]) -> dict[str, Any]:
            self.sent.append(message)
            if message["op"] == "list":
                return {"result": "jobs", "jobs": [failed, running, done]}
            return {"result": "ok", "answers": [{"result": "ok"}] * len(message["ids"])}

        def close(self) -> None:
            pass

    wires: list[_Coordinator] = []
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setattr(Wire, "connect", lambda **_: wires.append(_Coordinator()) or wires[-1])
    for words, states, listed, deleted in (
            ([], ["failed"], protocol.list_jobs(states=["failed"]), [failed]),
            (["failed"], [], protocol.list_jobs(), [failed]),
            ([], ["done"], protocol.list_jobs(states=[str(s) for s in FINAL]), [failed, done])):
        code = clean_core.clean_on_wire(words, all_jobs=False, states=states,
                                        older_than=None, cwd_dir=None, under_dir=None,
                                        auto=False)
        sent = wires[-1].sent
        assert code == 0 and sent[0] == listed, (words, states, sent)
        assert sent[1] == protocol.clean_many([str(r["id"]) for r in deleted])
        assert f"deleted {len(deleted)} record" in capsys.readouterr().out
