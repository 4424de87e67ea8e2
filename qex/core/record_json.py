"""The JSON form of a record: the coordinator's dict made safe to print, and its order.

Split from `qex.core.record_view` so that `status --json` and `list --json` need only
`qex.core.names` (no typed records, enums or `typing`); `record_view` hands both on, and its
typed `display` applies the same rules field by field.
"""

from __future__ import annotations

from qex.core.names import lock_shown, printable_line, safe_name, visible

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

_SAFE_FIELDS = ("name", "group_name", "dedupe_key")
_SAFE_LISTS = ("tags",)
_PRINTABLE_FIELDS = ("blocked_reason", "error", "forced_reason", "note")


def display_record(record: dict[str, Any]) -> dict[str, Any]:
    """A copy of `record` that is safe to print or to give as JSON to a terminal reader."""
    out = dict(record)
    for key in _SAFE_FIELDS:
        value = out.get(key)
        if isinstance(value, str):
            out[key] = safe_name(value)
    for key in _SAFE_LISTS:
        value = out.get(key)
        if isinstance(value, list):
            out[key] = [safe_name(str(v)) for v in value]
    locks = out.get("locks")
    if isinstance(locks, list):
        out["locks"] = [lock_shown(str(v)) for v in locks]
    for key in _PRINTABLE_FIELDS:
        value = out.get(key)
        if isinstance(value, str):
            out[key] = printable_line(value)
    command = out.get("command")
    if isinstance(command, list):
        out["command"] = [visible(str(arg)) for arg in command]
    cwd = out.get("cwd")
    if isinstance(cwd, str):
        out["cwd"] = visible(cwd)
    return out


def sort_key(record: Mapping[str, Any]) -> tuple[float, int]:
    """Submission order: the time, then the coordinator's sequence for a tie.

    It orders the dicts as they came, so `list --json` sorts without building typed records.
    """
    submitted = record.get("submitted_at")
    sequence = record.get("sequence")
    return (float(submitted) if isinstance(submitted, (int, float)) else 0.0,
            sequence if isinstance(sequence, int) else 0)
