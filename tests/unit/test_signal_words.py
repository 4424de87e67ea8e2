"""`core.signal_words` reads signals from `_signal` as the `signal` module's enums would."""

from __future__ import annotations

import signal

import pytest

from qex.core.signal_words import SIGNALS, parse_signal


def test_the_named_signals_are_the_enum_values() -> None:
    assert {name: int(signal.Signals[f"SIG{name}"]) for name in SIGNALS} == SIGNALS
    assert set(SIGNALS) == {"TERM", "KILL", "INT", "HUP", "QUIT", "USR1", "USR2"}


@pytest.mark.parametrize(("text", "number"), [
    ("TERM", signal.SIGTERM), ("sigkill", signal.SIGKILL), (" Int ", signal.SIGINT),
    ("SIGUSR2", signal.SIGUSR2), ("9", 9), ("1", 1), ("64", 64), ("SIG15", 15),
])
def test_the_forms_people_write_are_read(text: str, number: int) -> None:
    assert parse_signal(text) == int(number)


@pytest.mark.parametrize("text", ["", "0", "65", "-9", "NOPE", "SIG", "TERM9", "9.0", "STOP"])
def test_other_words_name_the_forms_taken(text: str) -> None:
    with pytest.raises(ValueError, match="is not a signal; give TERM, KILL"):
        parse_signal(text)
