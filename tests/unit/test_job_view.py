"""`record_view.JobView` reads a dict as `JobStatus` would, and the plain words of the hot
paths (`state_words`, `exit_band`, `signal_words`) agree with their typed sources."""

from __future__ import annotations

import signal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qex.core import model, state_words
from qex.core.exit_band import Exit as BandExit
from qex.core.exit_band import exit_code_for
from qex.core.record_view import DEFAULTS, JobView, typed, view
from qex.core.records import JobStatus
from qex.core.signal_words import signal_name
from qex.core.states import ACTIVE, FINAL, NOT_FINAL, State


def _status_defaults() -> dict[str, Any]:
    blank = JobStatus(id="", name="", command=[], cwd="")
    return {spec.name: getattr(blank, spec.name) for spec in model.fields(JobStatus)}


def test_the_view_has_the_fields_and_defaults_of_the_typed_record() -> None:
    expected = _status_defaults()
    assert set(DEFAULTS) == set(expected)
    empty = JobView({})
    for name, value in expected.items():
        assert getattr(empty, name) == value, name
    assert empty.state == "queued" and type(empty.state) is str


def test_a_default_list_is_a_fresh_copy_each_time() -> None:
    first = JobView({})
    first.tags.append("changed")
    assert JobView({}).tags == [] and DEFAULTS["tags"] == []


def test_an_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        JobView({}).no_such_field  # noqa: B018


def test_a_view_of_a_typed_record_reads_as_the_record() -> None:
    record = typed({"id": "a" * 8, "name": "n", "command": ["x"], "cwd": "/",
                    "state": "killed", "signal": 9, "tags": ["t"]})
    shown = view(record)
    assert (shown.state, shown.signal, shown.tags, shown.final, shown.active) == (
        "killed", 9, ["t"], True, False)
    assert view(shown) is shown


def test_the_words_are_the_states() -> None:
    assert tuple(s.value for s in State) == state_words.ALL_WORDS
    assert {s.value for s in ACTIVE} == state_words.ACTIVE_WORDS
    assert {s.value for s in NOT_FINAL} == state_words.NOT_FINAL_WORDS
    assert {s.value for s in FINAL} == state_words.FINAL_WORDS


@pytest.mark.parametrize("number", range(0, 70))
def test_signal_names_are_the_enum_names(number: int) -> None:
    try:
        expected = signal.Signals(number).name
    except ValueError:
        expected = f"signal {number}"
    assert signal_name(number) == expected


@given(state=st.sampled_from(state_words.ALL_WORDS),
       code=st.one_of(st.none(), st.integers(-300, 300)),
       sig=st.one_of(st.none(), st.integers(1, 64)), attempts=st.integers(0, 3))
def test_the_band_code_of_a_record_is_in_the_band(state: str, code: int | None,
                                                  sig: int | None, attempts: int) -> None:
    """0 only for completed; the job's own 1..96 only for failed with that code; every
    other end in 97..127."""
    result = exit_code_for({"state": state, "exit_code": code, "signal": sig,
                            "attempts": attempts})
    if state == "completed":
        assert result == 0
    elif state == "failed" and code is not None and 0 < code <= 96:
        assert result == code
    else:
        assert 97 <= result <= 127
    if state in state_words.NOT_FINAL_WORDS:
        assert result == BandExit.NOT_FINISHED
