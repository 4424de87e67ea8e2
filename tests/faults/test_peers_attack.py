"""A second local user attacks the shared peers directory (the user is made and removed here).

The attacker owns the peers root (they made it first, mode 1777), so they may rename or
replace our `u<uid>` directory at any moment. Our coordinator must never write outside its
own directory, never spin, and never flood its log.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from faultkit import FaultEnv, mount_tmpfs, need_root


@pytest.fixture
def attacker() -> Iterator[str]:
    need_root()
    if shutil.which("useradd") is None:
        pytest.skip("useradd is not installed, so no second user can be made")
    name = "qexatk" + uuid.uuid4().hex[:6]
    subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", name], check=True,
                   capture_output=True)
    try:
        yield name
    finally:
        subprocess.run(["pkill", "-KILL", "-u", name], check=False, capture_output=True)
        subprocess.run(["userdel", name], check=False, capture_output=True)


def as_user(name: str, script: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["setpriv", f"--reuid={name}", f"--regid={name}", "--clear-groups",
                             "--", "sh", "-c", script], stdin=subprocess.DEVNULL)


def test_a_swapped_user_dir_never_sends_a_write_elsewhere(
        fault_env: FaultEnv, attacker: str) -> None:
    peers = fault_env.root / "peers"
    victim_dir = fault_env.root / "home" / "target"
    victim_dir.mkdir()
    os.chmod(fault_env.root / "home", 0o755)
    info = pwd.getpwnam(attacker)
    # The attacker made the shared root first.
    peers.mkdir(mode=0o777)
    os.chmod(peers, 0o1777)
    os.chown(peers, info.pw_uid, info.pw_gid)
    me = f"u{os.getuid()}"
    fault_env.write_config('[peers]\nstale_after = "1s"\n')
    # The attacker swaps our directory for a link to our home and back, without end.
    swapper = as_user(attacker, f"""
        cd {peers}
        while true; do
          mv -f {me} stolen 2>/dev/null; ln -sfn {victim_dir} {me}
          rm -f {me}; mkdir -p {me} 2>/dev/null; rm -rf {me}; ln -sfn {victim_dir} {me}
        done""")
    try:
        job = fault_env.submit("--mem", "8MB", "--", "sleep", "4")
        fault_env.wait_record(job, lambda r: r["state"] == "running")
        time.sleep(3)  # several heartbeats of 1s (the attack runs throughout)
        fault_env.answers()
    finally:
        swapper.kill()
        swapper.wait()
    assert fault_env.run("wait", job, timeout=60).returncode == 0
    assert list(victim_dir.iterdir()) == []  # nothing was written through the link
    log = (fault_env.state / "run" / "daemon.log").read_text(errors="replace")
    assert log.count("could not publish") <= 10, log[-3000:]
    fault_env.answers()
    fault_env.logs_within_cap()


def test_a_hostile_peer_file_is_ignored(fault_env: FaultEnv, attacker: str) -> None:
    peers = fault_env.root / "peers"
    peers.mkdir()
    os.chmod(peers, 0o1777)
    info = pwd.getpwnam(attacker)
    theirs = peers / f"u{info.pw_uid}"
    theirs.mkdir()
    (theirs / "peer-1.json").write_text("[" * 200_000)
    fifo = theirs / "peer-2.json"
    os.mkfifo(fifo)
    for path in (theirs, theirs / "peer-1.json", fifo):
        os.chown(path, info.pw_uid, info.pw_gid)
    fault_env.write_config('[peers]\nstale_after = "1s"\n')
    assert fault_env.run("submit", "--wait", "--mem", "8MB", "--", "true",
                         timeout=60).returncode == 0
    fault_env.answers()
    fault_env.logs_within_cap()


def test_a_shared_root_without_the_sticky_bit_is_refused(fault_env: FaultEnv) -> None:
    from qex.store.peers import check_root

    root = fault_env.root / "open"
    root.mkdir()
    os.chmod(root, 0o777)
    problem = check_root(root)
    assert problem is not None and "sticky" in problem
    os.chmod(root, 0o1777)
    assert check_root(root) is None
    os.chmod(root, 0o755)  # ours, and nobody else may write: fine without the bit
    assert check_root(root) is None


def test_publish_refuses_a_link_and_a_foreign_directory(tmp_path: Path) -> None:
    from qex.store.peers import PeerRecord, UnsafeDirectory, publish

    need_root()
    root = tmp_path / "peers"
    root.mkdir()
    os.chmod(root, 0o1777)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    record = PeerRecord(uid=os.getuid(), pid=os.getpid(), boot_id="b", cpu=1)
    (root / f"u{os.getuid()}").symlink_to(elsewhere)
    with pytest.raises(UnsafeDirectory):
        publish(root, record)
    assert list(elsewhere.iterdir()) == []
    (root / f"u{os.getuid()}").unlink()
    (root / f"u{os.getuid()}").mkdir()
    os.chown(root / f"u{os.getuid()}", 65534, 65534)
    with pytest.raises(UnsafeDirectory):
        publish(root, record)
    assert list((root / f"u{os.getuid()}").iterdir()) == []


def test_a_full_peers_disk_backs_off_instead_of_spinning(fault_env: FaultEnv) -> None:
    import json
    import subprocess as sp

    need_root()
    peers = fault_env.root / "peers"
    peers.mkdir()
    mount_tmpfs(peers, "size=100k,mode=1777")
    try:
        fault_env.write_config('[peers]\nstale_after = "1s"\n')
        job = fault_env.submit("--mem", "8MB", "--", "sleep", "5")
        fault_env.wait_record(job, lambda r: r["state"] == "running")
        # Published once, then the disk fills: every heartbeat after that fails.
        fault_env.wait_for(lambda: list(peers.glob("u*/peer-*.json")), what="the peer file")
        filler = os.open(peers / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while True:
                try:
                    if os.write(filler, b"\0" * 4096) < 4096:
                        break
                except OSError:
                    break
        finally:
            os.close(filler)

        def wakeups() -> int:
            return int(json.loads(fault_env.run("info", "--json", check=True).stdout)["wakeups"])

        before = wakeups()
        time.sleep(3)
        after = wakeups()
        # A spinning loop wakes thousands of times in 3 seconds; backing off, a handful.
        assert after - before < 60, (before, after)
        assert fault_env.run("wait", job, timeout=60).returncode == 0
        log = (fault_env.state / "run" / "daemon.log").read_text(errors="replace")
        assert log.count("could not publish") == 1, log[-3000:]
        fault_env.answers()
        fault_env.logs_within_cap()
    finally:
        sp.run(["umount", "-l", str(peers)], check=False)


def test_a_swap_between_the_check_and_the_write_lands_nowhere_else(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The race of issue 6.4, made certain: the directory is swapped for a link right after
    qex checked it, before the write. The write must stay in the checked directory."""
    from qex.store import atomic
    from qex.store.peers import PeerRecord, publish

    root = tmp_path / "peers"
    root.mkdir()
    os.chmod(root, 0o1777)
    elsewhere = tmp_path / "home"
    elsewhere.mkdir()
    mine = root / f"u{os.getuid()}"
    real_write = atomic.write_bytes_at

    def swap_then_write(dir_fd: int, name: str, data: bytes, mode: int = 0o600) -> None:
        mine.rename(root / "stolen")
        mine.symlink_to(elsewhere)
        real_write(dir_fd, name, data, mode)

    monkeypatch.setattr(atomic, "write_bytes_at", swap_then_write)
    publish(root, PeerRecord(uid=os.getuid(), pid=4242, boot_id="b", cpu=1))
    assert list(elsewhere.iterdir()) == []
    assert [p.name for p in (root / "stolen").iterdir()] == ["peer-4242.json"]
