"""The one rule for `QEX_*_SECS` (qex.core.units.env_seconds): a number of seconds within the setting's bounds, else the
default, and every reader of such a variable uses it."""

from __future__ import annotations

import pytest

from qex.core.units import env_seconds


@pytest.mark.parametrize(("raw", "expected"), [
    (None, 7.0), ("", 7.0), ("  ", 7.0), ("x", 7.0), ("5s", 7.0), ("-1", 7.0), ("0", 0.0),
    (" 2.5 ", 2.5), ("100", 100.0), ("101", 7.0), ("nan", 7.0),
])
def test_one_rule(raw: str | None, expected: float) -> None:
    env = {} if raw is None else {"QEX_X_SECS": raw}
    assert env_seconds(env, "QEX_X_SECS", 7.0, high=100.0) == expected


def test_the_readers_share_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from qex.client.connection import _say_waiting_step, ceiling_from_env
    from qex.coordinator.main import idle_limit
    from qex.supervisor.runner import env_seconds as supervisor_seconds

    assert ceiling_from_env({"QEX_COORDINATOR_CEILING_SECS": "0.5"}) == 300
    assert ceiling_from_env({"QEX_COORDINATOR_CEILING_SECS": "12"}) == 12
    assert idle_limit({"QEX_IDLE_EXIT_SECS": "0"}) == 3600
    assert idle_limit({"QEX_IDLE_EXIT_SECS": "2"}) == 2
    monkeypatch.setenv("QEX_TERM_GRACE_SECS", "-3")
    assert supervisor_seconds("QEX_TERM_GRACE_SECS", 5.0) == 5.0
    monkeypatch.setenv("QEX_TERM_GRACE_SECS", "0.3")
    assert supervisor_seconds("QEX_TERM_GRACE_SECS", 5.0) == 0.3
    monkeypatch.setenv("QEX_SAY_WAITING_AFTER_SECS", "20")
    assert _say_waiting_step() == 10.0
    monkeypatch.setenv("QEX_SAY_WAITING_AFTER_SECS", "3")
    assert _say_waiting_step() == 3.0
