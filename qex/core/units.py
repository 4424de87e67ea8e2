"""Sizes, durations and percentages as people write them, and back.

Pure: no I/O. Every parser raises `UnitError` with a sentence that names the value and the
accepted forms, so the CLI and the config loader can show it unchanged.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping
    from decimal import Decimal

from qex.core import duration_text
from qex.core.duration_text import MAX_DURATION, NO_LIMIT_WORDS
from qex.core.unit_text import GIB, KIB, MIB, TIB, format_duration, format_size

#: The formatting half lives in `qex.core.unit_text` and the reading of durations in
#: `qex.core.duration_text` (neither imports `re`); this module hands them on.
__all__ = [
    "ENV_LONGEST", "GIB", "KIB", "MAX_COUNT", "MAX_DURATION", "MAX_SIZE", "MIB",
    "NO_LIMIT_WORDS", "TIB", "UnitError", "env_seconds", "format_duration", "format_size",
    "parse_count", "parse_duration", "parse_number", "parse_percent", "parse_size",
]

_SIZE_UNITS: dict[str, int] = {
    "": 1, "b": 1,
    "k": KIB, "kb": KIB, "kib": KIB,
    "m": MIB, "mb": MIB, "mib": MIB,
    "g": GIB, "gb": GIB, "gib": GIB,
    "t": TIB, "tb": TIB, "tib": TIB,
}


_NUMBER_UNIT = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zA-Z]*)\s*$")


#: Larger than the memory or disk of any machine (1 EiB): a size above it is a slip of the
#: keyboard, and refusing it keeps every later sum inside a 64-bit counter.
MAX_SIZE = 1 << 60
#: The largest whole number (priority, count) qex accepts: exact in a float and in JSON.
MAX_COUNT = (1 << 53) - 1


def _checked_size(number: int, what: str, shown: object) -> int:
    if number > MAX_SIZE:
        raise UnitError(
            f"the {what} `{shown}` is larger than any machine (more than 1024PB); give a "
            "realistic size such as 512MB or 8GB"
        )
    return number


class UnitError(ValueError):
    """A value that is not a size, a duration or a percentage; the message says why."""


def _split(text: str) -> tuple[Decimal, str] | None:
    from decimal import Decimal  # lazy: only sizes written as text need it
    # Decimal, not float: a byte count of twenty digits must come back exact.
    match = _NUMBER_UNIT.match(text)
    if match is None:
        return None
    return Decimal(match.group(1)), match.group(2).lower()


def parse_size(value: object, *, what: str = "size") -> int:
    """Bytes from `8GB`, `512m`, `1.5GiB` or a bare number (bytes). Steps are 1024."""
    if isinstance(value, bool):
        raise UnitError(
            f"the {what} `{value}` is not a size; give a number of bytes or a value "
            "such as 512MB or 8GB"
        )
    if isinstance(value, int):
        if value < 0:
            raise UnitError(f"the {what} `{value}` is negative; a size is zero or more")
        return _checked_size(value, what, value)
    if isinstance(value, float):
        if value < 0 or not math.isfinite(value):
            raise UnitError(f"the {what} `{value}` is not a size that qex accepts")
        return _checked_size(int(value), what, value)
    text = str(value)
    parts = _split(text)
    if parts is None or parts[1] not in _SIZE_UNITS:
        raise UnitError(
            f"the {what} `{text}` is not a size; give a number of bytes or a number with "
            "B, KB, MB, GB or TB (steps of 1024), such as 512MB or 8GB"
        )
    number, unit = parts
    return _checked_size(int(number * _SIZE_UNITS[unit]), what, text)


def parse_duration(value: object, *, what: str = "duration") -> float | None:
    """Seconds from `30s`, `5m`, `4h`, `2d` or a bare number.

    None for `0`, `none`, `never` and `unlimited`: "no limit".
    """
    if isinstance(value, bool):
        raise UnitError(
            f"the {what} `{value}` is not a time; give a value such as 30s, 5m, 4h or "
            "2d"
        )
    if isinstance(value, (int, float)):
        if value < 0 or not math.isfinite(value):
            raise UnitError(
                f"the {what} `{value}` is not a time that qex accepts; it must be zero "
                "or more"
            )
        if value > MAX_DURATION:
            raise UnitError(f"the {what} `{value}` is longer than 100 years; give a shorter one "
                            "(0, none or never for no limit)")
        return None if value == 0 else float(value)
    text = str(value).strip()
    try:
        return duration_text.seconds(text)
    except duration_text.NotATime:
        raise UnitError(
            f"the {what} `{text}` is not a time; give a number of seconds or a number with "
            "s, m, h or d, such as 30s, 5m, 4h or 2d (0, none or never for no limit)"
        ) from None
    except duration_text.TooLong:
        raise UnitError(f"the {what} `{text}` is longer than 100 years; give a shorter one "
                        "(0, none or never for no limit)") from None


def parse_percent(text: str) -> float | None:
    """The fraction in `75%`, or None when the text is not a percentage."""
    stripped = text.strip()
    if not stripped.endswith("%"):
        return None
    try:
        number = float(stripped[:-1])
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    return number / 100.0


def parse_count(value: object, *, what: str) -> int:
    """A whole number written with or without quotation marks."""
    if isinstance(value, bool):
        raise UnitError(f"{what} must be a whole number, and `{value}` is not one")
    number: int | None = None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    else:
        text = str(value).strip()
        if re.fullmatch(r"[+-]?[0-9]{1,30}", text):
            number = int(text)
    if number is None:
        raise UnitError(f"{what} must be a whole number, and `{value}` is not one")
    if abs(number) > MAX_COUNT:
        raise UnitError(f"{what} `{value}` is beyond any count qex keeps (at most {MAX_COUNT})")
    return number


def parse_number(value: object, *, what: str) -> float:
    """A number written with or without quotation marks."""
    if isinstance(value, bool):
        raise UnitError(f"{what} must be a number, and `{value}` is not one")
    if isinstance(value, int):
        return float(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UnitError(f"{what} must be a finite number, and `{value}` is not one")
        return value
    try:
        number = float(str(value).strip())
    except ValueError:
        raise UnitError(f"{what} must be a number, and `{value}` is not one") from None
    if not math.isfinite(number):
        raise UnitError(f"{what} must be a finite number, and `{value}` is not one")
    return number


# -- durations that the environment may override (`QEX_*_SECS`), read by one rule ----------
#
# The value is a plain number of seconds; when it is unset, empty, not a number, or outside
# the bounds that the setting allows, the default applies (never an error: these variables
# shorten waits in tests and tune a site, and a typo must not stop qex).

#: The longest duration any `QEX_*_SECS` setting takes (a year).
ENV_LONGEST = 365 * 86400.0


def env_seconds(env: Mapping[str, str], name: str, default: float, *, low: float = 0.0,
                high: float = ENV_LONGEST) -> float:
    """`env[name]` as seconds from `low` to `high` (both included), else `default`."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        return default
    return value if low <= value <= high else default
