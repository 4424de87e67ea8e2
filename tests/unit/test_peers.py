"""Peer records: the shared directory's safety checks, publish/withdraw, and defensive reads."""

from __future__ import annotations

import json
import os
from pathlib import Path

from qex.store.peers import PeerRecord, check_root, publish, read_peers, withdraw

ME = os.getuid()


def shared_root(tmp_path: Path) -> Path:
    root = tmp_path / "peers"
    root.mkdir()
    os.chmod(root, 0o1777)
    return root


def read(root: Path, *, now: float = 100.0, alive: set[int] | None = None, my_pid: int = 1):
    return read_peers(root, my_uid=ME, my_pid=my_pid, boot_id="boot", now=now, stale_after=30.0,
                      alive=lambda pid: alive is None or pid in alive)


def test_missing_root_is_created_sticky_and_open(tmp_path: Path) -> None:
    root = tmp_path / "new"
    assert check_root(root) is None
    assert os.stat(root).st_mode & 0o7777 == 0o1777


def test_root_without_sticky_bit_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir(mode=0o777)
    os.chmod(root, 0o777)
    assert "sticky" in (check_root(root) or "")


def test_symlinked_root_is_refused(tmp_path: Path) -> None:
    target = shared_root(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(target)
    assert "symbolic link" in (check_root(link) or "")


def test_publish_read_and_withdraw(tmp_path: Path) -> None:
    root = shared_root(tmp_path)
    record = PeerRecord(uid=ME, pid=4242, boot_id="boot", cpu=2, mem=1024, pools={"gpu": 1},
                        devices={"gpu": [3]}, updated_at=95.0)
    publish(root, record)
    path = root / f"u{ME}" / "peer-4242.json"
    assert os.stat(path).st_mode & 0o777 == 0o644
    assert os.stat(path.parent).st_mode & 0o777 == 0o755
    summary = read(root)
    assert (summary.count, summary.cpu, summary.mem) == (1, 2, 1024)
    assert summary.pools == {"gpu": 1} and summary.devices == {"gpu": {3}}
    # Our own record is never counted against us.
    assert read(root, my_pid=4242).count == 0
    withdraw(root, ME, 4242)
    assert not path.exists()
    withdraw(root, ME, 4242)


def test_several_coordinators_are_summed(tmp_path: Path) -> None:
    root = shared_root(tmp_path)
    for pid, cpu in ((10, 1), (11, 3)):
        publish(root, PeerRecord(uid=ME, pid=pid, boot_id="boot", cpu=cpu, mem=cpu * 10,
                                 devices={"gpu": [pid - 10]}, updated_at=99.0))
    summary = read(root)
    assert (summary.count, summary.cpu, summary.mem) == (2, 4, 40)
    assert summary.devices == {"gpu": {0, 1}}


def test_stale_dead_and_other_boot_records_are_skipped_and_removed(tmp_path: Path) -> None:
    root = shared_root(tmp_path)
    publish(root, PeerRecord(uid=ME, pid=20, boot_id="boot", cpu=1, updated_at=10.0))   # stale
    publish(root, PeerRecord(uid=ME, pid=21, boot_id="other", cpu=1, updated_at=99.0))  # boot
    publish(root, PeerRecord(uid=ME, pid=22, boot_id="boot", cpu=1, updated_at=99.0))   # dead
    publish(root, PeerRecord(uid=ME, pid=23, boot_id="boot", cpu=5, updated_at=99.0))   # fine
    summary = read(root, alive={20, 21, 23})
    assert (summary.count, summary.cpu) == (1, 5)
    left = sorted(p.name for p in (root / f"u{ME}").iterdir())
    assert left == ["peer-23.json"]


def test_hostile_files_are_ignored(tmp_path: Path) -> None:
    root = shared_root(tmp_path)
    user_dir = root / f"u{ME}"
    user_dir.mkdir()
    os.mkfifo(user_dir / "peer-30.json")  # must not block the reader
    (user_dir / "peer-31.json").write_text("x" * (70 * 1024))  # too large
    (user_dir / "peer-32.json").write_text("{broken")
    (user_dir / "peer-33.json").write_text(json.dumps({"uid": ME + 1, "pid": 33, "boot_id": "boot",
                                                        "cpu": 9, "updated_at": 99.0}))
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps({"uid": ME, "pid": 34, "boot_id": "boot", "cpu": 9,
                                  "updated_at": 99.0}))
    (user_dir / "peer-34.json").symlink_to(target)
    (root / "u-not-a-uid").mkdir()
    summary = read(root)
    assert summary.count == 0 and summary.cpu == 0


def test_unknown_fields_in_a_record_are_ignored(tmp_path: Path) -> None:
    root = shared_root(tmp_path)
    user_dir = root / f"u{ME}"
    user_dir.mkdir()
    (user_dir / "peer-40.json").write_text(json.dumps({
        "uid": ME, "pid": 40, "boot_id": "boot", "cpu": 2, "mem": 3, "updated_at": 99.0,
        "later_field": {"x": 1},
    }))
    assert read(root).cpu == 2
