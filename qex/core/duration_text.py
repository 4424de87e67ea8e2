"""Durations as people write them (`30s`, `5m`, `1h30m`, `2d`), read without `re`.

The parsing half of `qex.core.units.parse_duration`, which words the faults. It lives
apart because `wait --timeout` and `submit --wait-timeout` take a duration on the hot path,
where `re` and `typing` would cost more than the command's own work
(`docs/performance.md`). Pure, and free of imports.
"""

#: Words that mean "no limit" wherever a limit (duration or log size) is taken.
NO_LIMIT_WORDS = frozenset({"0", "none", "never", "unlimited"})

UNIT_SECONDS: dict[str, int] = {
    "": 1, "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
}

#: The longest time qex accepts (100 years): beyond it timers overflow and nothing is meant.
MAX_DURATION = 100 * 365 * 86400.0

_DIGITS = frozenset("0123456789")
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class NotATime(ValueError):
    """The text is not in any of the accepted forms."""


class TooLong(ValueError):
    """The text is a time longer than `MAX_DURATION`."""


def _skip(text: str, pos: int, chars: frozenset[str] | None) -> int:
    """The first position from `pos` that is not in `chars` (None: not white space)."""
    while pos < len(text) and (text[pos].isspace() if chars is None else text[pos] in chars):
        pos += 1
    return pos


def _part(text: str, pos: int) -> tuple[str, str, int] | None:
    """One part from `pos`: (the number, the unit as written, the position after it), with
    white space before the number and between the number and the unit; None when no number
    starts there. A number is digits with an optional point and decimals, or a point and
    decimals."""
    start = _skip(text, pos, None)
    end = _skip(text, start, _DIGITS)
    if end > start:
        if end < len(text) and text[end] == ".":
            end = _skip(text, end + 1, _DIGITS)
    elif end + 1 < len(text) and text[end] == "." and text[end + 1] in _DIGITS:
        end = _skip(text, end + 1, _DIGITS)
    else:
        return None
    unit_start = _skip(text, end, None)
    unit_end = _skip(text, unit_start, _LETTERS)
    return text[start:end], text[unit_start:unit_end], unit_end


def seconds(text: str) -> float | None:
    """Seconds in `text` (stripped already); None for no limit (`0`, `none`, `never`,
    `unlimited`, or a total of zero). Raises NotATime or TooLong.

    Compound forms such as 1h30m (which `format_duration` writes) add up. A part with no
    unit is seconds only when it stands alone: `1h30` is more likely a slip than 1h and 30s.
    """
    if text.lower() in NO_LIMIT_WORDS:
        return None
    total = 0.0
    pos = 0
    parts = 0
    unitless = False
    while pos < len(text):
        found = _part(text, pos)
        if found is None:
            break
        number, unit, after = found
        unit = unit.lower()
        if unit not in UNIT_SECONDS:
            break
        unitless = unitless or not unit
        total += float(number) * UNIT_SECONDS[unit]
        pos = after
        parts += 1
    if pos != len(text) or not text or (unitless and parts > 1):
        raise NotATime(text)
    if total > MAX_DURATION:
        raise TooLong(text)
    return None if total == 0 else total
