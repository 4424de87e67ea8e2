"""Sizes, durations, percentages and counts as people write them, and back."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qex.core import duration_text
from qex.core.units import (
    GIB,
    KIB,
    MIB,
    TIB,
    UnitError,
    format_duration,
    format_size,
    parse_count,
    parse_duration,
    parse_number,
    parse_percent,
    parse_size,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8GB", 8 * GIB),
        ("8G", 8 * GIB),
        ("8gib", 8 * GIB),
        ("512MB", 512 * MIB),
        ("1.5GiB", 3 * GIB // 2),
        (" 4 kb ", 4 * KIB),
        (".5K", 512),
        ("100", 100),
        ("100B", 100),
        ("2T", 2 * TIB),
        ("0", 0),
        (100, 100),
        (2.9, 2),
        ("1152921504606846975", 1152921504606846975),
    ],
)
def test_parse_size(text: object, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    "bad", ["-1", "8XB", "", "1e3", "GB", "8 G B", True, -5, float("nan"), float("inf")]
)
def test_parse_size_refuses(bad: object) -> None:
    with pytest.raises(UnitError):
        parse_size(bad)


def test_size_error_names_what_and_the_forms() -> None:
    with pytest.raises(UnitError, match=r"the mem value `8XB` is not a size.*512MB"):
        parse_size("8XB", what="mem value")


@given(st.integers(min_value=0, max_value=2**60))
def test_a_byte_count_in_text_is_exact(n: int) -> None:
    assert parse_size(str(n)) == n


@given(st.integers(min_value=0, max_value=1023), st.sampled_from([1, KIB, MIB, GIB, TIB]))
def test_whole_units_round_trip_exactly(k: int, unit: int) -> None:
    assert parse_size(format_size(k * unit)) == k * unit


@given(st.integers(min_value=0, max_value=2**50))
def test_format_size_round_trips_within_its_precision(n: int) -> None:
    back = parse_size(format_size(n))
    if n < KIB:
        assert back == n
    else:
        # One decimal of the largest unit: never more than 5% away (0.05 of a unit >= 1).
        assert abs(back - n) <= 0.05 * n + 1


def test_format_size_moves_up_a_unit_instead_of_1024() -> None:
    assert format_size(MIB - 1) == "1MB"
    assert format_size(1536 * MIB) == "1.5GB"
    assert format_size(100) == "100B"
    assert format_size(64 * KIB) == "64KB"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30s", 30.0),
        ("5m", 300.0),
        ("4h", 14400.0),
        ("2d", 172800.0),
        ("90", 90.0),
        ("1.5", 1.5),
        ("1h30m", 5400.0),
        ("2d3h", 183600.0),
        ("1 hour", 3600.0),
        ("10 mins", 600.0),
        ("0", None),
        ("none", None),
        ("Never", None),
        ("unlimited", None),
        (0, None),
        (45, 45.0),
        (2.5, 2.5),
    ],
)
def test_parse_duration(text: object, expected: float | None) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("bad", ["5 5", "1h30", "-5", "5x", "", "  ", "h", True, -1, float("inf")])
def test_parse_duration_refuses(bad: object) -> None:
    with pytest.raises(UnitError):
        parse_duration(bad)


def _exact_durations() -> st.SearchStrategy[int]:
    """Durations that `format_duration` writes without loss (two units at most)."""
    return st.one_of(
        st.integers(min_value=1, max_value=59),
        st.builds(lambda m, s: m * 60 + s, st.integers(1, 59), st.integers(0, 59)),
        st.builds(lambda h, m: h * 3600 + m * 60, st.integers(1, 23), st.integers(0, 59)),
        st.builds(lambda d, h: d * 86400 + h * 3600, st.integers(1, 400), st.integers(0, 23)),
    )


@given(_exact_durations())
def test_durations_round_trip(seconds: int) -> None:
    assert parse_duration(format_duration(seconds)) == seconds


@given(st.floats(min_value=0.05, max_value=10 * 365 * 86400, allow_nan=False))
def test_every_formatted_duration_parses(seconds: float) -> None:
    back = parse_duration(format_duration(seconds))
    assert back is None or back >= 0


def test_format_duration_small_values() -> None:
    assert format_duration(2.5) == "2.5s"
    assert format_duration(9.96) == "10s"
    assert format_duration(0.04) == "0s"
    assert format_duration(45) == "45s"
    assert format_duration(330) == "5m30s"
    assert format_duration(3900) == "1h5m"
    assert format_duration(183600) == "2d3h"
    assert format_duration(None) == "no limit"


def test_percent() -> None:
    assert parse_percent("75%") == 0.75
    assert parse_percent(" 12.5% ") == 0.125
    assert parse_percent("75") is None
    assert parse_percent("abc%") is None
    assert parse_percent("nan%") is None
    assert parse_percent("inf%") is None


def test_count_and_number() -> None:
    assert parse_count("2", what="x") == 2
    assert parse_count(" -3 ", what="x") == -3
    assert parse_count(4.0, what="x") == 4
    for bad in ("2.5", 2.5, True, "two"):
        with pytest.raises(UnitError, match="whole number"):
            parse_count(bad, what="x")
    assert parse_number("1.5", what="x") == 1.5
    assert parse_number(2, what="x") == 2.0
    for bad_number in ("inf", math.inf, math.nan, False, "abc"):
        with pytest.raises(UnitError):
            parse_number(bad_number, what="x")


# -- durations without `re` ---------------------------------------------------------------

_PART = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zA-Z]*)")


def _regex_seconds(text: str) -> float | str | None:
    """The reading that `parse_duration` made with `re` before the hot path needed it
    without: the seconds, None for no limit, or the kind of fault."""
    if text.lower() in duration_text.NO_LIMIT_WORDS:
        return None
    total, pos, parts, unitless = 0.0, 0, 0, False
    while pos < len(text):
        match = _PART.match(text, pos)
        if match is None or match.end() == pos:
            break
        unit = match.group(2).lower()
        if unit not in duration_text.UNIT_SECONDS:
            break
        unitless = unitless or not unit
        total += float(match.group(1)) * duration_text.UNIT_SECONDS[unit]
        pos = match.end()
        parts += 1
    if pos != len(text) or not text or (unitless and parts > 1):
        return "not a time"
    if total > duration_text.MAX_DURATION:
        return "too long"
    return None if total == 0 else total


def _scanned_seconds(text: str) -> float | str | None:
    try:
        return duration_text.seconds(text)
    except duration_text.NotATime:
        return "not a time"
    except duration_text.TooLong:
        return "too long"


@settings(max_examples=1500)
@given(st.text(alphabet="0123456789.smhdinSMHDx \t\u00a0\u0663", max_size=12).map(str.strip))
def test_the_scanner_reads_durations_as_the_regular_expression_did(text: str) -> None:
    assert _scanned_seconds(text) == _regex_seconds(text)


@pytest.mark.parametrize("text", [
    "30s", "5m", "1h30m", "2d", "1.5h", ".5s", "5.", "1h 30m", "90", "1 h", "3 days", "0",
    "never", "NONE", "1h30", "5x", "", ".", "1..2s", "3650000d", "5s5", "\u0663s", "1e3",
])
def test_the_scanner_agrees_on_the_usual_and_the_odd_forms(text: str) -> None:
    assert _scanned_seconds(text) == _regex_seconds(text)
