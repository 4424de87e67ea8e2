"""JSON as `json.dumps(value, indent=2)` writes it, without `import json`.

`json` imports `re`, and with an indent it encodes in Python anyway (its C encoder has no
indent), so this writer costs nothing extra at run time and saves the imports on every read
command. Strings go through the same C escaper that `json` uses (ASCII output); numbers use
the same `repr`s. A unit test compares the two on many values.
"""

from __future__ import annotations

from _json import encode_basestring_ascii

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_INFINITY = float("inf")


def _float(value: float) -> str:
    if value != value:  # noqa: PLR0124 (NaN, without importing math)
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)


def _key(key: object) -> str:
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    if isinstance(key, float):
        return _float(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


#: "\n" and the indent of each depth, made once.
_BREAKS: list[str] = ["\n" + "  " * depth for depth in range(32)]
#: A key as it is written (`"name": `), by key; a listing repeats the same few dozen keys.
_KEYS: dict[object, str] = {}


def _break(depth: int) -> str:
    return _BREAKS[depth] if depth < len(_BREAKS) else "\n" + "  " * depth


def _encode_dict(value: dict[Any, Any], depth: int, out: list[str]) -> None:
    inner = _break(depth + 1)
    separator = "{" + inner
    keys = _KEYS
    for key, item in value.items():
        written = keys.get(key) if type(key) is str else None
        if written is None:
            written = encode_basestring_ascii(_key(key)) + ": "
            if type(key) is str and len(keys) < 4096:
                keys[key] = written
        out.append(separator)
        out.append(written)
        separator = "," + inner
        _encode(item, depth + 1, out)
    out.append(_break(depth) + "}")


def _encode(value: Any, depth: int, out: list[str]) -> None:  # noqa: C901, PLR0912 (a type a branch)
    # The exact types first, tested with `is`: a listing writes about 50 scalars per record.
    kind = type(value)
    if kind is str:
        out.append(encode_basestring_ascii(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif kind is int:
        out.append(int.__repr__(value))
    elif kind is float:
        out.append(_float(value))
    elif isinstance(value, str):  # subclasses, as json writes them
        out.append(encode_basestring_ascii(value))
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_float(value))
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = _break(depth + 1)
        separator = "[" + inner
        for item in value:
            out.append(separator)
            separator = "," + inner
            _encode(item, depth + 1, out)
        out.append(_break(depth) + "]")
    elif isinstance(value, dict):
        if value:
            _encode_dict(value, depth, out)
        else:
            out.append("{}")
    else:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: Any) -> str:
    """`json.dumps(value, indent=2)`: the form of every `--json` document qex prints."""
    out: list[str] = []
    _encode(value, 0, out)
    return "".join(out)



def array_item(value: Any) -> str:
    """`value` as `dumps` writes it when it is an item of a top-level list (one level deeper).

    With `array`, a list can be written from items written earlier: the coordinator keeps
    each record's item text, and `qex list --json` copies them instead of encoding."""
    out: list[str] = []
    _encode(value, 1, out)
    return "".join(out)


def array(items: list[str]) -> str:
    """`dumps(values)` for a list, from its items as `array_item` wrote them."""
    if not items:
        return "[]"
    return "[\n  " + ",\n  ".join(items) + "\n]"
