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


def _encode(value: Any, depth: int, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(encode_basestring_ascii(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_float(value))
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = "\n" + "  " * (depth + 1)
        out.append("[")
        first = True
        for item in value:
            out.append(inner if first else "," + inner)
            first = False
            _encode(item, depth + 1, out)
        out.append("\n" + "  " * depth + "]")
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = "\n" + "  " * (depth + 1)
        out.append("{")
        first = True
        for key, item in value.items():
            out.append(inner if first else "," + inner)
            first = False
            out.append(encode_basestring_ascii(_key(key)))
            out.append(": ")
            _encode(item, depth + 1, out)
        out.append("\n" + "  " * depth + "}")
    else:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: Any) -> str:
    """`json.dumps(value, indent=2)`: the form of every `--json` document qex prints."""
    out: list[str] = []
    _encode(value, 0, out)
    return "".join(out)


def print_json(value: Any) -> None:
    """Write one indented JSON document and a newline to stdout, and flush it."""
    import sys

    sys.stdout.write(dumps(value) + "\n")
    sys.stdout.flush()
