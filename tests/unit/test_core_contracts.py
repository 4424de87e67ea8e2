"""The small core contracts: states and the exit band, names, records, protocol helpers."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qex.core import protocol, state_words
from qex.core.names import derive_name, is_safe_name, is_uuid, new_id, printable, safe_name, visible
from qex.core.records import JobSpec, JobStatus
from qex.core.states import (
    FINAL,
    NOT_FINAL,
    Exit,
    State,
    exit_code_for,
    parse_state,
    parse_state_filter,
)


@pytest.mark.parametrize(
    ("record", "code"),
    [
        ({"state": "completed", "exit_code": 0}, 0),
        ({"state": "failed", "exit_code": 7}, 7),
        ({"state": "failed", "exit_code": 96}, 96),
        ({"state": "failed", "exit_code": 97}, Exit.JOB_HIGH),
        ({"state": "failed", "exit_code": 255}, Exit.JOB_HIGH),
        ({"state": "failed", "exit_code": None, "signal": 11}, Exit.SIGNAL),
        ({"state": "failed", "exit_code": None, "signal": None}, Exit.QEX_FAILED),
        ({"state": "oom", "signal": 9}, Exit.OOM),
        ({"state": "killed", "signal": 15}, Exit.STOPPED),
        ({"state": "timeout"}, Exit.STOPPED),
        ({"state": "cancelled"}, Exit.STOPPED),
        ({"state": "expired"}, Exit.EXPIRED),
        ({"state": "skipped"}, Exit.SKIPPED),
        ({"state": "running"}, Exit.NOT_FINISHED),
        ({"state": "queued"}, Exit.NOT_FINISHED),
    ],
)
def test_exit_band(record: dict[str, object], code: int) -> None:
    assert exit_code_for(record) == code


def test_every_code_from_a_job_stays_in_its_band() -> None:
    for job_code in range(256):
        code = exit_code_for({"state": "completed" if job_code == 0 else "failed", "exit_code": job_code})
        assert code == job_code if job_code <= 96 else code == Exit.JOB_HIGH


def test_states_partition() -> None:
    assert set(State) == FINAL | NOT_FINAL
    assert not FINAL & NOT_FINAL
    assert parse_state("Canceled") is State.CANCELLED
    assert parse_state_filter("done") == FINAL
    with pytest.raises(ValueError, match="not a state"):
        parse_state_filter("finishd")


def test_safe_names() -> None:
    assert safe_name("deploy prod$(id)") == "deploy_prod_id_"
    assert safe_name("-version") == "_version"
    assert safe_name("café") == "caf_"
    assert safe_name("build-*") == "build-_"
    assert is_safe_name("train-1.2_x")
    assert not is_safe_name("a b")
    assert not is_safe_name(new_id())
    assert derive_name("/usr/bin/python3") == "python3"
    assert derive_name("///") == "job"


@given(st.text())
def test_safe_name_is_idempotent_and_clean(text: str) -> None:
    once = safe_name(text)
    assert safe_name(once) == once
    assert all(c.isascii() and (c.isalnum() or c in "._-") for c in once)
    assert not once.startswith("-")


@given(st.text())
def test_visible_and_printable_hide_control_bytes(text: str) -> None:
    assert "\x1b" not in visible(text)
    assert "\n" not in visible(text)
    assert "\x1b" not in printable(text)


def test_ids() -> None:
    job_id = new_id()
    assert is_uuid(job_id)
    assert not is_uuid("build")


def test_records_round_trip_and_ignore_unknown_fields() -> None:
    spec = JobSpec(id=new_id(), name="x", cwd="/", command=["true"], env={"A": "1"}, cpu=1,
                   mem=1024, submitted_at=1.0)
    data = json.loads(json.dumps(spec.to_dict()))
    data["a_field_from_the_future"] = 1
    assert JobSpec.from_dict(data) == spec
    status = JobStatus.new(spec, boot_id="b", oom_retries=2)
    raw = status.to_dict()
    raw["another_new_field"] = {"x": 1}
    again = JobStatus.from_dict(raw)
    assert again == status
    assert again.state == "queued" and not again.final


def test_protocol_framing() -> None:
    line = protocol.encode({"op": "ping", "extra": [1, 2]})
    assert line.endswith(b"\n") and b"\n" not in line[:-1]
    assert protocol.decode(line)["op"] == "ping"
    with pytest.raises(protocol.ProtocolError):
        protocol.decode(b"[1, 2]")
    with pytest.raises(protocol.ProtocolError):
        protocol.decode(b"{not json")


def test_versions() -> None:
    assert protocol.version_tuple("0.6.0") == (0, 6, 0)
    assert protocol.version_tuple("0.0.0-dev+g98513e2") == (0, 0, 0)
    assert protocol.is_development("0.0.0-dev+g98513e2")
    assert protocol.below_floor("0.5.2")
    assert not protocol.below_floor(protocol.VERSION)


@pytest.mark.parametrize("word", [*state_words.ALL_WORDS, "done", "finished", "terminal",
                                  "active", "Canceled", " RUNNING ", "finishd", ""])
def test_the_plain_state_filter_reads_words_as_the_typed_one(word: str) -> None:
    """`qex list --state` on the fast path reads its words without `enum`; both readings
    agree, faults and their sentences included."""
    try:
        typed: object = {str(s) for s in parse_state_filter(word)}
    except ValueError as exc:
        typed = str(exc)
    try:
        plain: object = set(state_words.filter_words(word))
    except ValueError as exc:
        plain = str(exc)
    assert plain == typed


@settings(max_examples=500)
@given(st.one_of(
    st.text(alphabet="0123456789abcdefABCDEFg-\n", max_size=40),
    st.builds(lambda a, b: a[:b] + "-" + a[b + 1:], st.from_regex(
        r"\A[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\n?\Z"),
        st.integers(min_value=0, max_value=37)),
    st.from_regex(
        r"\A[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\n?\Z")))
def test_is_uuid_is_the_anchored_pattern(text: str) -> None:
    import re

    pattern = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    assert is_uuid(text) == bool(re.match(pattern, text))


def test_a_word_that_names_a_damaged_job_says_so() -> None:
    from qex.core.word_match import ResolveError, match_word

    job_id = "0a1b2c3d-0000-4000-8000-000000000001"
    damaged = {job_id: f"/state/jobs/{job_id}/status.json"}
    for word in (job_id, job_id.upper(), job_id[:8]):
        with pytest.raises(ResolveError) as caught:
            match_word([], word, history={}, now=0.0, damaged=damaged)
        assert caught.value.not_found
        assert "is DAMAGED" in caught.value.message and damaged[job_id] in caught.value.message
    with pytest.raises(ResolveError) as caught:  # too short to be a short id
        match_word([], job_id[:6], history={}, now=0.0, damaged=damaged)
    assert "DAMAGED" not in caught.value.message
    with pytest.raises(ResolveError) as caught:  # another id: the history's sentence
        match_word([], "0a1b2c3d-0000-4000-8000-000000000002", history={}, now=0.0,
                   damaged=damaged)
    assert "no record of one" in caught.value.message
