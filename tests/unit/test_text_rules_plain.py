"""The text rules without `re` (`qex.core.names`) give what their patterns give."""

from __future__ import annotations

import random
import re

from qex.core.names import MAX_NAME_BYTES, is_uuid, safe_name

_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9._-]+")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def _by_pattern(name: str) -> str:
    text = _UNSAFE_RUN.sub("_", name)
    if text.startswith("-"):
        text = "_" + text[1:]
    return text[:MAX_NAME_BYTES]


def _words(seed: int, alphabet: str, count: int = 3000) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
            for _ in range(count)]


def test_safe_name_is_the_substitution() -> None:
    for word in [*_words(1, "aZ09._- \t\n\x1b/é€💥"), "", "-", "--x", "a" * 300, "ünï"]:
        assert safe_name(word) == _by_pattern(word), repr(word)


def test_is_uuid_is_the_anchored_pattern() -> None:
    base = "01c1b7ad-f684-4f8e-96cd-43a2f73839e2"
    cases = [base, base.upper(), base + "\n", base + "\n\n", "\n" + base, base + " ", base[:-1],
             base + "0", base.replace("-", "_"), base.replace("a", "g"), "", "-" * 4,
             "０" * 8 + base[8:], base.replace("1", "\u0661")]
    rng = random.Random(2)
    for _ in range(2000):
        chars = list(base)
        chars[rng.randrange(len(chars))] = rng.choice("0aF-g\n ")
        cases.append("".join(chars))
    for text in cases:
        assert is_uuid(text) == bool(_UUID.match(text)), repr(text)
