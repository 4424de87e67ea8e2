"""Paths from the environment and atomic record writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

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
    """Each file's data, the job directory once, and the jobs directory (the new name)."""
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
        assert synced[-2:] == [str(job_dir), str(paths.jobs_dir)]


def test_a_new_job_that_cannot_be_written_leaves_nothing(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from qex.store import jobs

    paths, spec, status = _new_job(tmp_path)
    real = atomic.write_json

    def full_at_status(path: Path, data: object, mode: int = 0o600, *,
                       sync_dir: bool = True) -> None:
        if path.name == jobs.STATUS:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data, mode, sync_dir=sync_dir)

    monkeypatch.setattr(atomic, "write_json", full_at_status)
    with pytest.raises(OSError):
        jobs.create_job(paths, spec, status)
    assert list(paths.jobs_dir.iterdir()) == []
    other = paths.job_dir(spec.id)
    other.mkdir()
    (other / "keep").write_text("x")
    with pytest.raises(FileExistsError):
        jobs.create_job(paths, spec, status)
    assert (other / "keep").exists()
