"""What the job records cost on disk, and which directories hold no record at all.

`du` and `gc` read the jobs directory themselves: sizes are a property of the disk, and a
directory whose `status.json` cannot be read is invisible to the coordinator, so only a
walk of the disk finds it.

A directory with no record can also be a submission in progress (the directory is made a
moment before its files), so such a directory counts as an orphan only once nothing in it
changed for ORPHAN_MIN_AGE seconds.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from qex.core.model import dataclass
from qex.store import atomic, jobs
from qex.store.paths import Paths
from qex.store.tree_size import tree_bytes

#: A directory with no record younger than this may be a submission being written.
ORPHAN_MIN_AGE = 120.0


@dataclass
class JobDir:
    path: Path
    bytes: int
    record: dict[str, Any] | None
    #: The newest modification time of the directory or of a file in it.
    changed_at: float

    @property
    def id(self) -> str:
        return self.path.name


def _newest_change(path: Path) -> float:
    newest = 0.0
    try:
        newest = path.stat().st_mtime
        for entry in os.scandir(path):
            try:
                newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
            except OSError:
                pass
    except OSError:
        pass
    return newest


def scan_jobs(paths: Paths) -> list[JobDir]:
    """Every job directory with its size and its record (None when it cannot be read)."""
    found: list[JobDir] = []
    for job_dir in jobs.iter_job_dirs(paths):
        data = atomic.read_json(job_dir / jobs.STATUS)
        record = data if isinstance(data, dict) and isinstance(data.get("id"), str) else None
        found.append(JobDir(path=job_dir, bytes=tree_bytes(job_dir), record=record,
                            changed_at=_newest_change(job_dir)))
    return found


def is_orphan(entry: JobDir, *, known: set[str], now: float, older_than: float) -> bool:
    """No readable record, unknown to the coordinator, and untouched for long enough."""
    if entry.record is not None or entry.id in known:
        return False
    return now - entry.changed_at >= max(older_than, ORPHAN_MIN_AGE)
