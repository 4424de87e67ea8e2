"""`history.jsonl`: the ids that this state dir accepted, and when their records went.

A record can be deleted (`qex clean`, `qex gc`) while an agent still holds the id. Without a
trace, `qex status <id>` could only say "no such job", and the agent would submit the work a
second time. One line per event keeps enough to say "that work happened": the id, the name,
when it was accepted, and, once removed, when and in which final state.

Lines: `{"id", "name", "submitted_at", "removed_at": null|epoch, "final_state": null|state}`.
The coordinator is the only writer (appends are single `write` calls on an O_APPEND file, so a
reader never sees half a line); pruning rewrites the file atomically.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from qex.core.history_entry import HistoryEntry
from qex.store import atomic
from qex.store.paths import Paths

#: A history file larger than this is not read whole by `lookup` (it reads the tail only).
MAX_READ_BYTES = 16 * 1024 * 1024


def _parse_line(line: bytes) -> HistoryEntry | None:
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        return None
    try:
        submitted = float(data.get("submitted_at") or 0.0)
        removed_raw = data.get("removed_at")
        removed = float(removed_raw) if removed_raw is not None else None
    except (TypeError, ValueError):
        return None
    state = data.get("final_state")
    name = data.get("name")
    return HistoryEntry(
        id=data["id"], name=name if isinstance(name, str) else "",
        submitted_at=submitted, removed_at=removed,
        final_state=state if isinstance(state, str) else None,
    )


def _read_lines(path: Path) -> Iterator[HistoryEntry]:
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_READ_BYTES:
                handle.seek(size - MAX_READ_BYTES)
                handle.readline()  # the first line may be cut
            for line in handle:
                entry = _parse_line(line)
                if entry is not None:
                    yield entry
    except OSError:
        return


def _append(path: Path, entries: Iterable[HistoryEntry]) -> None:
    data = b"".join(
        json.dumps(entry.to_dict(), separators=(",", ":")).encode("utf-8") + b"\n"
        for entry in entries
    )
    if not data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def record_submitted(paths: Paths, job_id: str, name: str, submitted_at: float) -> None:
    """Note that a job was accepted. Raises OSError (the caller decides how much it matters)."""
    _append(paths.history_file, [HistoryEntry(job_id, name, submitted_at)])


def record_removed(
    paths: Paths, job_id: str, name: str, submitted_at: float, *, removed_at: float,
    final_state: str | None,
) -> None:
    """Note that a record was deleted by qex, and in which state the job had ended."""
    _append(paths.history_file, [HistoryEntry(job_id, name, submitted_at, removed_at, final_state)])


def read_all(paths: Paths) -> dict[str, HistoryEntry]:
    """Every id in the history, each merged from its lines (a removal line wins)."""
    merged: dict[str, HistoryEntry] = {}
    for entry in _read_lines(paths.history_file):
        earlier = merged.get(entry.id)
        if earlier is not None and entry.removed_at is None and earlier.removed_at is not None:
            continue
        merged[entry.id] = entry
    return merged


def lookup(paths: Paths, job_id: str) -> HistoryEntry | None:
    """What the history says about one id, or None when it never saw it."""
    return read_all(paths).get(job_id)


def prune(paths: Paths, *, keep: float, now: float, live_ids: set[str]) -> int:
    """Drop the ids whose last trace is older than `keep` and whose record is gone.

    An id whose record still exists is always kept: its removal line is yet to come. Returns
    how many ids went. The rewrite is atomic, so a crash leaves the old file whole.
    """
    path = paths.history_file
    if not path.exists():
        return 0
    merged = read_all(paths)
    drop: set[str] = set()
    for job_id, entry in merged.items():
        if job_id in live_ids:
            continue
        last = entry.removed_at if entry.removed_at is not None else entry.submitted_at
        if now - last > keep:
            drop.add(job_id)
    if not drop:
        return 0
    kept = [entry for entry in _read_lines(path) if entry.id not in drop]
    data = b"".join(
        json.dumps(entry.to_dict(), separators=(",", ":")).encode("utf-8") + b"\n" for entry in kept
    )
    atomic.write_bytes(path, data, mode=0o600)
    return len(drop)
