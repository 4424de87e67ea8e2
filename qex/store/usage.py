"""The learner's store: what earlier runs of each command used, one small file per command.

Layout: `usage/<key>.json` in the state directory, each `{"name": "...", "samples": [...]}`
(samples as in `qex.core.learner`), 0600 in a 0700 directory.

Why a file per command: a submission looks up one command, and a finished job changes one.
With every command in one `usage.json`, each submission parsed the whole store and each job's
end rewrote and synced it, and the store only ever grew (every distinct command line of a
shell loop is a command of its own). Measured here: with 5,000 commands (1.9 MB) a
`qex submit -- true` took 33.9 ms instead of 13 ms, with 20,000 (7.8 MB) 107 ms.

Bounded: past `MAX_COMMANDS` files, a new command removes the ones that taught something
longest ago (by the file's modification time), down to a tenth below the bound.

Writers hold `flock(usage.lock)` around each read-modify-write, so two supervisors that end
at once do not lose a sample; readers take no lock, since every write is atomic. An entry that
does not parse is not thrown away: its readable samples are kept, and the bad file is renamed
aside (`<key>.json.corrupt-<epoch>`) for a person to look at. A file that cannot be READ
(permissions, I/O) is left alone and nothing is written over it.

The single `usage.json` of earlier versions is split into the files by the first write, under
the lock, and then renamed `usage.json.migrated` (kept, so nothing learned is lost should a
power cut take some of the new files; it may be deleted). Until that write, lookups read it.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any

from qex.core import learner
from qex.store import atomic
from qex.store.paths import Paths, ensure_private_dir

#: Commands kept; a new one past this removes the longest unused (each file takes a block
#: of the disk, 4 KB on most, so the store stays under about 8 MB).
MAX_COMMANDS = 2000
#: What the store of earlier versions is renamed to once it is split.
MIGRATED_SUFFIX = ".migrated"
_ENTRY_SUFFIX = ".json"
_KEY_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-")


class _Unreadable(Exception):
    pass


def entry_path(paths: Paths, key: str) -> Path | None:
    """The file of one command, or None for a key that is not a plain file name (keys are
    hex digits from `learner.learn_key`; nothing else may reach the file system)."""
    if not key or len(key) > 64 or not set(key) <= _KEY_CHARS:
        return None
    return paths.usage_dir / f"{key}{_ENTRY_SUFFIX}"


def _well_formed(data: object) -> bool:
    return (isinstance(data, dict) and isinstance(data.get("samples"), list)
            and all(learner.valid_sample(s) for s in data["samples"]))


def _parse(raw: bytes) -> object:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def _read_entry(path: Path, *, set_aside: bool) -> dict[str, Any] | None:
    """The entry in `path` (salvaged when need be), None when there is none.
    `set_aside`: a malformed file is renamed aside (writers only). Raises _Unreadable."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _Unreadable(str(exc)) from None
    data = _parse(raw)
    if _well_formed(data):
        assert isinstance(data, dict)
        return data
    if set_aside:
        try:
            os.rename(path, path.with_name(f"{path.name}.corrupt-{int(time.time())}"))
        except OSError:
            pass
    return learner.salvage_entry(data)


def _legacy_commands(paths: Paths) -> dict[str, Any] | None:
    """The commands of the single-file store of earlier versions; None when there is none or
    it cannot be read. Raises nothing."""
    try:
        with open(paths.usage_file, "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    data = _parse(raw)
    commands = data.get("commands") if isinstance(data, dict) else None
    if isinstance(commands, dict) and all(
        isinstance(k, str) and _well_formed(v) for k, v in commands.items()
    ):
        return commands
    salvaged = learner.salvage(data)["commands"]
    assert isinstance(salvaged, dict)
    return salvaged


def lookup(paths: Paths, key: str) -> dict[str, Any] | None:
    """The entry of one command, or None. Reads one small file, without the lock."""
    path = entry_path(paths, key)
    if path is None:
        return None
    try:
        entry = _read_entry(path, set_aside=False)
    except _Unreadable:
        return None
    if entry is not None:
        return entry
    legacy = _legacy_commands(paths)  # not split yet: no job has ended since the upgrade
    found = legacy.get(key) if legacy else None
    return found if isinstance(found, dict) else None


def _migrate(paths: Paths) -> None:
    """Split the single-file store into one file per command (under the lock). Its newest
    `MAX_COMMANDS` commands are kept; where a command has a file already (an older qex ran
    beside this one, or after it), the entry that taught something last wins. The new files
    are not synced one by one (thousands of syncs, once): the old store, renamed and kept,
    still holds what a power cut might take."""
    commands = _legacy_commands(paths)
    if commands is None:
        return  # none, or unreadable: left alone
    newest = sorted(commands.items(), key=lambda item: learner.last_seen(item[1]),
                    reverse=True)[:MAX_COMMANDS]
    for key, entry in newest:
        path = entry_path(paths, key)
        if path is None:
            continue
        seen = learner.last_seen(entry)
        try:
            present = _read_entry(path, set_aside=False)
        except _Unreadable:
            continue
        if present is not None and learner.last_seen(present) >= seen:
            continue
        atomic.write_json(path, entry, mode=0o600, durable=False)
        if seen > 0:
            try:
                os.utime(path, (seen, seen))
            except (OSError, OverflowError, ValueError):
                pass
    atomic.fsync_dir(paths.usage_dir)
    os.replace(paths.usage_file, paths.usage_file.with_name(
        paths.usage_file.name + MIGRATED_SUFFIX))
    atomic.fsync_dir(paths.state_dir)


def _prune(paths: Paths, keep: int) -> None:
    """Past `keep` commands, remove the ones that taught something longest ago, down to a
    tenth below the bound: counting the names is cheap, and the times (a stat of every file)
    are then read once per that many new commands rather than for each."""
    with os.scandir(paths.usage_dir) as found:
        names = [item.path for item in found
                 if item.name.endswith(_ENTRY_SUFFIX) and not item.name.startswith(".")]
    if len(names) <= keep:
        return
    aged: list[tuple[int, str]] = []
    for path in names:
        try:
            aged.append((os.lstat(path).st_mtime_ns, path))
        except OSError:
            continue
    aged.sort()
    for _, path in aged[:len(aged) - (keep - keep // 10)]:
        try:
            os.unlink(path)
        except OSError:
            pass


def _record(paths: Paths, key: str, name: str, sample: dict[str, Any]) -> bool:
    path = entry_path(paths, key)
    if path is None:
        return False
    if not paths.usage_dir.is_dir():
        ensure_private_dir(paths.usage_dir)
    fd = os.open(paths.usage_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.path.lexists(paths.usage_file):
            _migrate(paths)
        try:
            entry = _read_entry(path, set_aside=True)
        except _Unreadable:
            return False
        atomic.write_json(path, learner.add_sample(entry, sample, name), mode=0o600)
        if entry is None:  # only a new command can pass the bound
            _prune(paths, MAX_COMMANDS)
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
