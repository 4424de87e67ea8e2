"""`paused.json`: the queue pause and the locks that a person took, kept across restarts.

The file is the single source of truth for pauses: a coordinator that stops and a new one
that starts must agree that the queue is still held. Format:
`{"queue": null | PauseRecord, "locks": {name: PauseRecord}}` with PauseRecord =
`{paused_at, by_pid, reason, until, fault}`. The file is removed when nothing is paused.

A file that exists but cannot be read or parsed may have held a pause, and qex cannot know,
so `read_pause` turns it into a queue pause "by fault" instead of silently running the queue.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from qex.core.model import dataclass, field
from qex.store import atomic

#: A pause file is tiny; anything larger is not one of ours.
MAX_BYTES = 1024 * 1024


@dataclass
class PauseRecord:
    paused_at: float
    by_pid: int = 0
    reason: str | None = None
    until: float | None = None
    fault: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "paused_at": self.paused_at, "by_pid": self.by_pid, "reason": self.reason,
            "until": self.until, "fault": self.fault,
        }

    @classmethod
    def from_dict(cls, data: object) -> PauseRecord:
        """Raises ValueError for anything that is not a pause record."""
        if not isinstance(data, dict):
            raise ValueError("a pause record is not a JSON object")
        try:
            paused_at = float(data["paused_at"])
        except (KeyError, TypeError, ValueError):
            raise ValueError("a pause record has no valid `paused_at`") from None
        by_pid = data.get("by_pid", 0)
        reason = data.get("reason")
        until = data.get("until")
        if not isinstance(by_pid, int) or isinstance(by_pid, bool):
            raise ValueError("a pause record has a `by_pid` that is not a number")
        if reason is not None and not isinstance(reason, str):
            raise ValueError("a pause record has a `reason` that is not text")
        if until is not None and (not isinstance(until, (int, float)) or isinstance(until, bool)):
            raise ValueError("a pause record has an `until` that is not a time")
        return cls(paused_at=paused_at, by_pid=by_pid, reason=reason,
                   until=float(until) if until is not None else None,
                   fault=bool(data.get("fault", False)))


@dataclass
class PauseFile:
    queue: PauseRecord | None = None
    locks: dict[str, PauseRecord] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return self.queue is None and not self.locks

    def to_dict(self) -> dict[str, Any]:
        return {
            "queue": self.queue.to_dict() if self.queue else None,
            "locks": {name: record.to_dict() for name, record in sorted(self.locks.items())},
        }


def fault_record(path: Path, problem: str, now: float) -> PauseRecord:
    """The queue pause that stands in for a pause file that qex cannot read."""
    return PauseRecord(paused_at=now, by_pid=0, reason=f"{path}: {problem}", until=None, fault=True)


def parse_pause(raw: bytes) -> PauseFile:
    """Raises ValueError naming the problem."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"the file is not JSON ({exc})") from None
    except RecursionError:
        raise ValueError("the file nests its values too deeply to be a pause file") from None
    if not isinstance(data, dict):
        raise ValueError("the file is not a JSON object")
    queue_raw = data.get("queue")
    queue = PauseRecord.from_dict(queue_raw) if queue_raw is not None else None
    locks_raw = data.get("locks") or {}
    if not isinstance(locks_raw, dict):
        raise ValueError("`locks` is not a JSON object")
    locks = {str(name): PauseRecord.from_dict(value) for name, value in locks_raw.items()}
    return PauseFile(queue=queue, locks=locks)


def read_pause(path: Path, now: float) -> PauseFile:
    """The pauses on disk. Missing file: nothing paused. Unreadable: the queue held by fault."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return PauseFile()
    except OSError as exc:
        return PauseFile(queue=fault_record(path, exc.strerror or str(exc), now))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return PauseFile(queue=fault_record(path, "the path is not a regular file", now))
        if info.st_size > MAX_BYTES:
            too_large = "the file is too large to be a pause record"
            return PauseFile(queue=fault_record(path, too_large, now))
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError as exc:
        return PauseFile(queue=fault_record(path, exc.strerror or str(exc), now))
    finally:
        os.close(fd)
    try:
        return parse_pause(b"".join(chunks))
    except ValueError as exc:
        return PauseFile(queue=fault_record(path, str(exc), now))


def write_pause(path: Path, pauses: PauseFile) -> None:
    """Write the pauses atomically (0600), or remove the file when nothing is paused."""
    if pauses.empty:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_json(path, pauses.to_dict(), mode=0o600)
