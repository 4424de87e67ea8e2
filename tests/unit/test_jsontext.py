"""`qex.core.jsontext.dumps` writes what `json.dumps(value, indent=2)` writes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qex.core.jsontext import array, array_item, dumps

_SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
            | st.text())
_KEYS = st.text() | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=30,
)


@given(_VALUES)
def test_same_text_as_json(value: Any) -> None:
    assert dumps(value) == json.dumps(value, indent=2)


@pytest.mark.parametrize("value", [
    {}, [], {"a": []}, {"a": {}}, [float("inf"), float("-inf")], {"é\x1b": "💥\n"},
    {"id": "x", "command": ["sh", "-c", "echo"], "usage": {"max_rss": 1, "cpu_secs": 0.25}},
])
def test_known_shapes(value: Any) -> None:
    assert dumps(value) == json.dumps(value, indent=2)


def test_refuses_what_json_refuses() -> None:
    with pytest.raises(TypeError):
        dumps({"a": object()})
    with pytest.raises(TypeError):
        dumps({(1, 2): 1})


def test_deeper_than_the_made_indents() -> None:
    value: Any = {"leaf": 1}
    for depth in range(40):
        value = [value] if depth % 2 else {"k": value, "n": depth}
    assert dumps(value) == json.dumps(value, indent=2)


@given(st.lists(_VALUES, max_size=5))
def test_array_from_items_is_the_list(values: list[Any]) -> None:
    """The coordinator's ready item texts, joined, are the list as json writes it."""
    assert array([array_item(v) for v in values]) == json.dumps(values, indent=2)
