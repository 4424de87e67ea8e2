"""Durations that the environment may override (`QEX_*_SECS`), read by one rule.

Pure: the caller passes the environment. The rule: the value is a plain number of seconds;
when it is unset, empty, not a number, or outside the bounds that the setting allows, the
default applies (never an error: these variables shorten waits in tests and tune a site,
and a typo must not stop qex).
"""

from __future__ import annotations

from collections.abc import Mapping

#: The longest duration any of these settings takes (a year).
LONGEST = 365 * 86400.0


def env_seconds(env: Mapping[str, str], name: str, default: float, *, low: float = 0.0,
                high: float = LONGEST) -> float:
    """`env[name]` as seconds from `low` to `high` (both included), else `default`."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        return default
    return value if low <= value <= high else default
