"""`--lock` words: any printable name, and only a number after the last `:` is a count."""

from __future__ import annotations

import pytest

from qex.core.claims import ClaimError, parse_lock_option
from qex.core.names import lock_arg, lock_shown


@pytest.mark.parametrize(("text", "expected"), [
    ("net", ("net", 1)),
    ("net:1", ("net", 1)),
    ("net:3", ("net", 3)),
    ("target/debug", ("target/debug", 1)),
    ("/srv/data/cache", ("/srv/data/cache", 1)),
    ("my build dir", ("my build dir", 1)),
    ("host:db", ("host:db", 1)),
    ("/srv/a:b:2", ("/srv/a:b", 2)),
    (" spaced ", ("spaced", 1)),
])
def test_names_people_write(text: str, expected: tuple[str, int]) -> None:
    assert parse_lock_option(text) == expected


@pytest.mark.parametrize("text", ["", "net:", "net:0", "a:1.5", "cpu", "MEM:2", "a\x1bb",
                                  "x" * 300])
def test_refusals_name_the_problem(text: str) -> None:
    with pytest.raises(ClaimError) as info:
        parse_lock_option(text)
    assert "\x1b" not in str(info.value) and "\n" not in str(info.value)


def test_shown_escaped_and_quoted_for_a_shell() -> None:
    assert lock_shown("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert lock_arg("target/debug") == "target/debug"
    assert lock_arg("my dir") == "'my dir'"
    assert lock_arg("it's") == "'it'\\''s'"
