"""What `qex.cli.fastread` repeats to stay off heavy imports agrees with its source."""

from __future__ import annotations

from typing import Any

import pytest

from qex.cli import fastread
from qex.cli.fast_table import TABLE
from qex.core import protocol
from qex.core.states import FINAL
from qex.core.units import parse_duration
from qex.platform.signal_words import parse_signal


def test_final_states_are_the_states_final() -> None:
    assert {s.value for s in FINAL} == fastread.FINAL_STATES


def test_kill_defaults_are_what_the_parsers_make_of_them() -> None:
    defaults = TABLE["kill"]["defaults"]
    assert (defaults["signal_text"], defaults["grace"]) == (
        fastread.DEFAULT_SIGNAL_TEXT, fastread.DEFAULT_GRACE_TEXT)
    assert parse_signal(fastread.DEFAULT_SIGNAL_TEXT) == fastread.default_signal()
    assert parse_duration(fastread.DEFAULT_GRACE_TEXT) == fastread.DEFAULT_GRACE_SECS


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
    assert protocol.list_jobs("1a2b") == {"op": "list", "word": "1a2b"}  # `_by_prefix`
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
