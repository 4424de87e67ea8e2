"""Peer records: each coordinator on the machine publishes what its running jobs claim.

Layout: `<peers>/u<uid>/peer-<pid>.json` (compact JSON, 0644; the user dir 0755; the root
1777 like /tmp). Several users' coordinators read each other's files and subtract the claims
from their own budget. The method is cooperative, not a control, and the directory is shared
with every user of the machine, so reading is defensive: no symlink is followed, an open never
blocks (a FIFO planted as a peer file must not hang the coordinator), a file must belong to
the uid its directory names, sizes are capped, and stale, dead or other-boot records are
ignored (and removed when we may).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from qex.core.model import dataclass, field
from qex.store import atomic

MAX_PEER_FILE = 64 * 1024


@dataclass
class PeerRecord:
    uid: int
    pid: int
    boot_id: str
    cpu: int = 0
    mem: int = 0
    pools: dict[str, int] = field(default_factory=dict)
    devices: dict[str, list[int]] = field(default_factory=dict)
    updated_at: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "uid": self.uid, "pid": self.pid, "boot_id": self.boot_id, "cpu": self.cpu,
            "mem": self.mem, "pools": dict(self.pools),
            "devices": {name: sorted(indices) for name, indices in self.devices.items()},
            "updated_at": self.updated_at,
        }

    @classmethod
    def from_dict(cls, data: object) -> PeerRecord | None:
        if not isinstance(data, dict):
            return None
        try:
            pools_raw = data.get("pools") or {}
            devices_raw = data.get("devices") or {}
            record = cls(
                uid=int(data["uid"]), pid=int(data["pid"]), boot_id=str(data.get("boot_id", "")),
                cpu=max(0, int(data.get("cpu", 0))), mem=max(0, int(data.get("mem", 0))),
                pools={str(k): max(0, int(v)) for k, v in dict(pools_raw).items()},
                devices={str(k): [int(i) for i in v] for k, v in dict(devices_raw).items()},
                updated_at=float(data.get("updated_at", 0.0)),
            )
        except (KeyError, TypeError, ValueError):
            return None
        return record


@dataclass
class PeerSummary:
    """The sum of every other coordinator's claims."""

    count: int = 0
    cpu: int = 0
    mem: int = 0
    pools: dict[str, int] = field(default_factory=dict)
    devices: dict[str, set[int]] = field(default_factory=dict)

    def add(self, record: PeerRecord) -> None:
        self.count += 1
        self.cpu += record.cpu
        self.mem += record.mem
        for name, units in record.pools.items():
            self.pools[name] = self.pools.get(name, 0) + units
        for name, indices in record.devices.items():
            self.devices.setdefault(name, set()).update(indices)


def check_root(root: Path) -> str | None:
    """None when the shared directory is safe to use; otherwise why not (a sentence).

    A missing directory is created with mode 1777. An existing one must be a real directory
    (not a symlink) with the sticky bit, and either world-writable, or owned by root, or by us:
    anything else lets another user swap our files.
    """
    try:
        info = os.lstat(root)
    except FileNotFoundError:
        try:
            root.mkdir(parents=True, exist_ok=True)
            os.chmod(root, 0o1777)
            info = os.lstat(root)
        except OSError as exc:
            return f"qex cannot create the directory {root}: {exc.strerror or exc}"
    except OSError as exc:
        return f"qex cannot read the directory {root}: {exc.strerror or exc}"
    if stat.S_ISLNK(info.st_mode):
        return f"{root} is a symbolic link, and qex follows none in a shared directory"
    if not stat.S_ISDIR(info.st_mode):
        return f"{root} is not a directory"
    if not info.st_mode & stat.S_ISVTX:
        return (f"{root} has no sticky bit, so another user could delete or replace the files "
                "of this user")
    world_writable = bool(info.st_mode & stat.S_IWOTH)
    if not (world_writable or info.st_uid == 0 or info.st_uid == os.getuid()):
        return f"{root} belongs to another user (uid {info.st_uid})"
    return None


def _user_dir(root: Path, uid: int) -> Path:
    return root / f"u{uid}"


def _peer_file(root: Path, uid: int, pid: int) -> Path:
    return _user_dir(root, uid) / f"peer-{pid}.json"


def publish(root: Path, record: PeerRecord) -> None:
    """Write our record atomically. Raises OSError (or ValueError for an unsafe user dir)."""
    user_dir = _user_dir(root, record.uid)
    try:
        info = os.lstat(user_dir)
    except FileNotFoundError:
        user_dir.mkdir(mode=0o755)
        info = os.lstat(user_dir)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode) or info.st_uid != record.uid:
        raise ValueError(f"{user_dir} is not a directory that belongs to this user")
    if stat.S_IMODE(info.st_mode) != 0o755:
        os.chmod(user_dir, 0o755)
    data = json.dumps(record.to_dict(), separators=(",", ":")).encode("utf-8")
    atomic.write_bytes(_peer_file(root, record.uid, record.pid), data, mode=0o644)


def withdraw(root: Path, uid: int, pid: int) -> None:
    """Remove our record; a missing file is fine."""
    try:
        os.unlink(_peer_file(root, uid, pid))
    except OSError:
        pass


def _read_capped(path: Path, owner: int) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != owner or info.st_size > MAX_PEER_FILE:
            return None
        data = os.read(fd, MAX_PEER_FILE + 1)
        return data if len(data) <= MAX_PEER_FILE else None
    except OSError:
        return None
    finally:
        os.close(fd)


def read_peers(  # noqa: C901 (one check per field of a peer file)
    root: Path, *, my_uid: int, my_pid: int, boot_id: str, now: float, stale_after: float,
    alive: Callable[[int], bool],
) -> PeerSummary:
    """Sum the claims of every other live coordinator of this boot.

    Records of another boot, older than `stale_after`, or of a dead pid are skipped and, when
    the file is ours to delete (our own uid), removed.
    """
    summary = PeerSummary()
    try:
        user_dirs = list(os.scandir(root))
    except OSError:
        return summary
    for entry in user_dirs:
        name = entry.name
        if not name.startswith("u") or not name[1:].isdigit():
            continue
        uid = int(name[1:])
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            files = list(os.scandir(entry.path))
        except OSError:
            continue
        for file_entry in files:
            fname = file_entry.name
            if not (fname.startswith("peer-") and fname.endswith(".json")):
                continue
            path = Path(file_entry.path)
            raw = _read_capped(path, uid)
            if raw is None:
                continue
            try:
                record = PeerRecord.from_dict(json.loads(raw))
            except ValueError:
                record = None
            if record is None or record.uid != uid:
                continue
            if uid == my_uid and record.pid == my_pid:
                continue
            usable = (
                record.boot_id == boot_id
                and now - record.updated_at <= stale_after
                and alive(record.pid)
            )
            if not usable:
                if uid == my_uid:
                    try:
                        os.unlink(path)
                    except OSError:
                        pass
                continue
            summary.add(record)
    return summary
