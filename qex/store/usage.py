"""`usage.json`: what earlier runs of each command used, for the learned claim.

Format: `{"commands": {"<16-hex key>": {"name": "...", "samples": [...]}}}` (samples as in
`qex.core.learner`). Writers hold `flock(usage.lock)` around read-modify-write, so two
supervisors that finish at once do not lose a sample; every write is atomic and 0600.

A file that does not parse is not thrown away: its readable entries are kept, and the bad
file is renamed aside (`usage.json.corrupt-<epoch>`) so a person can look at it. A file that
cannot be READ (permissions, I/O) is left alone and nothing is written, since writing would
replace what qex could not see.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from typing import Any

from qex.core import learner
from qex.store import atomic
from qex.store.paths import Paths, ensure_private_dir


class _Unreadable(Exception):
    pass


def _load(paths: Paths, *, salvage_aside: bool) -> dict[str, Any]:
    try:
        with open(paths.usage_file, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return {"commands": {}}
    except OSError as exc:
        raise _Unreadable(str(exc)) from None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        data = None
    commands = data.get("commands") if isinstance(data, dict) else None
    if isinstance(commands, dict) and all(
        isinstance(k, str) and isinstance(v, dict) and isinstance(v.get("samples", []), list)
        for k, v in commands.items()
    ):
        assert isinstance(data, dict)
        return data
    kept = learner.salvage(data)
    if salvage_aside:
        try:
            os.rename(paths.usage_file, paths.state_dir / f"usage.json.corrupt-{int(time.time())}")
        except OSError:
            pass
    return kept


def lookup(paths: Paths, key: str) -> dict[str, Any] | None:
    """The entry of one command, or None. Reads without the lock: writes are atomic."""
    try:
        data = _load(paths, salvage_aside=False)
    except _Unreadable:
        return None
    entry = data["commands"].get(key)
    return entry if isinstance(entry, dict) else None


def _record(paths: Paths, key: str, name: str, sample: dict[str, Any]) -> bool:
    if not paths.state_dir.is_dir():
        ensure_private_dir(paths.state_dir)
    fd = os.open(paths.usage_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            data = _load(paths, salvage_aside=True)
        except _Unreadable:
            return False
        commands = data.setdefault("commands", {})
        commands[key] = learner.add_sample(commands.get(key), sample, name)
        atomic.write_json(paths.usage_file, data, mode=0o600)
        return True
    finally:
        os.close(fd)


def record_peak(
    paths: Paths, key: str, *, name: str, max_rss: int, cpu_secs: float,
    elapsed_secs: float, at: float, claim: int | None = None,
) -> bool:
    """Add a completed run. False when the store could not be read, so nothing was written."""
    sample = learner.peak_sample(max_rss=max_rss, cpu_secs=cpu_secs,
                                 elapsed_secs=elapsed_secs, at=at, claim=claim)
    return _record(paths, key, name, sample)


def record_oom(
    paths: Paths, key: str, *, name: str, claim: int, max_rss: int, cpu_secs: float,
    elapsed_secs: float, at: float,
) -> bool:
    """Add a proven memory kill: a lower bound for the next claim of this command."""
    sample = learner.oom_sample(claim=claim, max_rss=max_rss, cpu_secs=cpu_secs,
                                elapsed_secs=elapsed_secs, at=at)
    return _record(paths, key, name, sample)
