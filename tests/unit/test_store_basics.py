"""Paths from the environment and atomic record writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from qex.core.records import JobSpec, JobStatus
from qex.store import atomic
from qex.store.paths import MAX_SOCKET_PATH, PathError, Paths


def test_paths_follow_xdg(tmp_path: Path) -> None:
    paths = Paths.from_env({"XDG_CONFIG_HOME": str(tmp_path / "c"), "XDG_STATE_HOME": str(tmp_path / "s"),
                            "QEX_PEERS_DIR": str(tmp_path / "p")})
    assert paths.config_file == tmp_path / "c" / "qex.toml"
    assert paths.state_dir == tmp_path / "s" / "qex"
    assert paths.jobs_dir == tmp_path / "s" / "qex" / "jobs"
    assert paths.peers_dir("/tmp/qex") == tmp_path / "p"


def test_paths_fall_back_to_home(tmp_path: Path) -> None:
    paths = Paths.from_env({"HOME": str(tmp_path)})
    assert paths.config_file == tmp_path / ".config" / "qex.toml"
    assert paths.state_dir == tmp_path / ".local" / "state" / "qex"
    assert paths.peers_dir("/tmp/qex") == Path("/tmp/qex")


def test_paths_without_home_is_an_error() -> None:
    with pytest.raises(PathError, match="HOME"):
        Paths.from_env({})


def test_long_state_dir_gets_a_short_socket(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 120)
    paths = Paths.from_env({"HOME": str(tmp_path), "XDG_STATE_HOME": str(deep),
                            "XDG_RUNTIME_DIR": str(tmp_path / "rt")})
    assert len(os.fsencode(paths.socket_path)) <= MAX_SOCKET_PATH
    again = Paths.from_env({"HOME": str(tmp_path), "XDG_STATE_HOME": str(deep),
                            "XDG_RUNTIME_DIR": str(tmp_path / "rt")})
    assert again.socket_path == paths.socket_path


def test_atomic_write_is_private_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "status.json"
    atomic.write_json(target, {"a": 1})
    atomic.write_json(target, {"a": 2})
    assert atomic.read_json(target) == {"a": 2}
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["status.json"]


def test_failed_write_keeps_the_old_record(tmp_path: Path) -> None:
    target = tmp_path / "status.json"
    atomic.write_json(target, {"keep": True})
    with pytest.raises(TypeError):
        atomic.write_json(target, {"bad": object()})
    assert atomic.read_json(target) == {"keep": True}
    assert [p.name for p in tmp_path.iterdir()] == ["status.json"]


def test_read_json_of_garbage_is_none(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("{half")
    assert atomic.read_json(tmp_path / "x") is None
    assert atomic.read_json(tmp_path / "missing") is None


@pytest.mark.parametrize(("runtime_len", "tmp_len"), [(5, 5), (150, 5), (5, 150), (150, 150)])
def test_socket_fallback_fits_even_under_long_dirs(tmp_path: Path, runtime_len: int,
                                                   tmp_len: int) -> None:
    deep = tmp_path / ("s" * 200)
    runtime = tmp_path / ("r" * runtime_len)
    scratch = tmp_path / ("t" * tmp_len)
    env = {"HOME": str(tmp_path), "XDG_STATE_HOME": str(deep), "XDG_RUNTIME_DIR": str(runtime),
           "TMPDIR": str(scratch)}
    paths = Paths.from_env(env)
    assert len(os.fsencode(paths.socket_path)) <= MAX_SOCKET_PATH
    # The first base where the whole path fits is the one chosen; /tmp when none does.
    leaf = Path(*paths.socket_path.parts[-2:])
    fitting = [b for b in (runtime, scratch) if len(os.fsencode(b / leaf)) <= MAX_SOCKET_PATH]
    assert paths.socket_path == (fitting[0] if fitting else Path("/tmp")) / leaf
    assert Paths.from_env(env).socket_path == paths.socket_path


def test_the_last_fallback_fits_for_any_uid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    """/tmp/qex-<uid>-<16 hex>/qex.sock: at most 45 bytes, whatever the uid (32 bits)."""
    monkeypatch.setattr(os, "getuid", lambda: 4294967294)
    long_dir = str(tmp_path / ("l" * 150))
    paths = Paths.from_env({"HOME": str(tmp_path), "XDG_STATE_HOME": long_dir,
                            "XDG_RUNTIME_DIR": long_dir, "TMPDIR": "relative/dir"})
    assert paths.socket_path.parts[:2] == ("/", "tmp")
    assert len(os.fsencode(paths.socket_path)) <= 45 < MAX_SOCKET_PATH < 108


def _new_job(tmp_path: Path) -> tuple[Paths, JobSpec, JobStatus]:
    paths = Paths.from_env({"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "s")})
    spec = JobSpec(id="0123abcd-0000-4000-8000-000000000000", name="j", cwd="/",
                   command=["true"], env={}, cpu=1, mem=1024, submitted_at=1.0)
    return paths, spec, JobStatus.new(spec, boot_id=None, oom_retries=0)


def test_a_new_job_is_durable_with_four_fsyncs(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Each file's data, the job directory once, and the jobs directory (the new name): the
    files' syncs before the directories' (two at a time, side by side, in either order)."""
    from qex.store import jobs

    paths, spec, status = _new_job(tmp_path)
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}") if os.path.exists("/proc/self/fd")
                      else str(fd))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    job_dir = jobs.create_job(paths, spec, status)
    assert sorted(p.name for p in job_dir.iterdir()) == [jobs.SPEC, jobs.STATUS]
    assert len(synced) == 4
    if os.path.exists("/proc/self/fd"):
        assert {os.path.basename(p).split(".tmp.")[0] for p in synced[:2]} == {
            f".{jobs.SPEC}", f".{jobs.STATUS}"}
        assert set(synced[2:]) == {str(job_dir), str(paths.jobs_dir)}


def _failing_at(monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    """Make one step of writing the second of two files fail: its data (a full disk), its
    sync in the caller's thread or the first file's in a helper thread (an I/O error), or its
    rename."""
    import errno
    import threading

    def second_call_fails(owner: object, name: str) -> None:
        real = getattr(owner, name)
        calls: list[object] = []

        def failing(*args: Any) -> Any:
            calls.append(args)
            if len(calls) == 2:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(*args)

        monkeypatch.setattr(owner, name, failing)

    if step == "data":
        second_call_fails(atomic, "_write_all")
    elif step == "rename":
        second_call_fails(os, "rename")
    else:
        real_fsync = os.fsync

        def fsync(fd: int) -> None:
            beside = threading.current_thread() is not threading.main_thread()
            if beside is (step == "sync beside") and not os.path.isdir(f"/proc/self/fd/{fd}"):
                raise OSError(errno.EIO, "Input/output error")
            real_fsync(fd)

        monkeypatch.setattr(os, "fsync", fsync)


@pytest.mark.parametrize("step", ["data", "sync here", "sync beside", "rename"])
def test_a_new_job_that_cannot_be_written_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    from qex.store import jobs

    paths, spec, status = _new_job(tmp_path)
    paths.jobs_dir.mkdir(parents=True)
    _failing_at(monkeypatch, step)
    with pytest.raises(OSError):
        jobs.create_job(paths, spec, status)
    assert list(paths.jobs_dir.iterdir()) == []
    monkeypatch.undo()
    other = paths.job_dir(spec.id)
    other.mkdir()
    (other / "keep").write_text("x")
    with pytest.raises(FileExistsError):
        jobs.create_job(paths, spec, status)
    assert (other / "keep").exists()


@pytest.mark.parametrize("step", ["data", "sync here", "sync beside", "rename"])
def test_files_written_together_leave_no_temp_file(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   step: str) -> None:
    """Both files whole, private and in place; after a failure, no temp file, and only a
    file renamed before it."""
    items = [(tmp_path / "one.json", b"1\n"), (tmp_path / "two.json", b"2\n")]
    atomic.commit_files(atomic.stage_files(items))
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == {
        "one.json": b"1\n", "two.json": b"2\n"}
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in tmp_path.iterdir())
    failing = tmp_path / "failing"
    failing.mkdir()
    _failing_at(monkeypatch, step)
    with pytest.raises(OSError):
        atomic.commit_files(atomic.stage_files([(failing / "one.json", b"1"),
                                                (failing / "two.json", b"2")]))
    assert sorted(p.name for p in failing.iterdir()) == (["one.json"] if step == "rename"
                                                         else [])


def test_a_forked_child_syncs_with_threads_of_its_own(tmp_path: Path) -> None:
    """The helper threads of a parent do not exist in its forked child (the coordinator
    forks its fork server): the child makes its own rather than wait for them forever."""
    import warnings

    atomic.commit_files(atomic.stage_files([(tmp_path / "a", b"a"), (tmp_path / "b", b"b")]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12 warns of the helper thread
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            import signal

            signal.alarm(10)
            atomic.commit_files(atomic.stage_files([(tmp_path / "c", b"c"),
                                                    (tmp_path / "d", b"d")]))
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert (tmp_path / "d").read_bytes() == b"d"


@pytest.mark.parametrize("directories", [False, True])
def test_syncs_together_reach_every_descriptor_once(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    directories: bool) -> None:
    """23 descriptors in shares: each synced once, some by this thread and some beside it;
    a file's failed sync is raised only once every other sync was tried, a directory's is
    ignored."""
    import errno
    import threading

    synced: list[tuple[int, bool]] = []
    lock = threading.Lock()
    bad = 11

    def fsync(fd: int) -> None:
        with lock:
            synced.append((fd, threading.current_thread() is threading.main_thread()))
        if fd == fds[bad]:
            raise OSError(errno.EIO, "Input/output error")

    fds = [os.open(tmp_path, os.O_RDONLY) for _ in range(23)]
    try:
        monkeypatch.setattr(os, "fsync", fsync)
        if directories:
            atomic.fsync_together(fds, directories=True)
        else:
            with pytest.raises(OSError, match="Input/output"):
                atomic.fsync_together(fds)
    finally:
        for fd in fds:
            os.close(fd)
    assert sorted(fd for fd, _here in synced) == sorted(fds)
    assert {here for _fd, here in synced} == {True, False}
