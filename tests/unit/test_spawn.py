"""Starting a job: the fast path (posix_spawn from a thread) and the fork path give the same
job and the same sentences. Every test that applies to both runs on both; the `fast` runs
fail if the fork path was taken instead (os.fork is poisoned there)."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from qex.platform import jobprocess
from qex.supervisor import fastspawn
from qex.supervisor import spawn as spawn_module
from qex.supervisor.spawn import Child, SpawnError, spawn

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")
PATH = "/usr/local/bin:/usr/bin:/bin"
#: glibc's internal SIGCANCEL and SIGSETXID: before glibc 2.38, posix_spawn leaves them
#: ignored in the child (qex.supervisor.fastspawn explains why that is accepted).
GLIBC_INTERNAL = (1 << 31) | (1 << 32)


@pytest.fixture(params=["fast", "fork"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test on one path; on `fast`, any fork fails it."""
    monkeypatch.delenv("QEX_PLATFORM", raising=False)
    if request.param == "fork":
        monkeypatch.setenv(spawn_module.FORK_VAR, "1")
        return "fork"
    if not sys.platform.startswith("linux"):
        pytest.skip("the fast path is Linux only")
    monkeypatch.delenv(spawn_module.FORK_VAR, raising=False)

    def no_fork() -> int:
        raise AssertionError("the fast path forked")

    monkeypatch.setattr(os, "fork", no_fork)
    return "fast"


def run(child: Child) -> tuple[str, int]:
    """Start `child` with stdout and stderr on one pipe; its output and wait status."""
    read_fd, write_fd = os.pipe()
    try:
        pid = spawn(child, write_fd, write_fd)
    finally:
        os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        out = pipe.read()
    _, status = os.waitpid(pid, 0)
    return out.decode(), status


@contextlib.contextmanager
def sleeper(child: Child) -> Iterator[int]:
    """A job that sleeps while the test looks at it from outside; killed afterwards."""
    pid = spawn(child, 1, 2)
    try:
        yield pid
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def job(argv: list[str], cwd: str | Path = "/", **fields: object) -> Child:
    env = fields.pop("env", {"PATH": PATH})
    return Child(argv=argv, env=env, cwd=str(cwd), **fields)  # type: ignore[arg-type]


def failure(child: Child) -> SpawnError:
    with pytest.raises(SpawnError) as caught:
        spawn(child, 1, 2)
    return caught.value


def script(path: Path, text: str, mode: int = 0o755) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


# -- the program: argv[0] on the job's PATH, as os.execvpe finds it ---------------------------

def test_the_program_is_found_on_the_jobs_path(way: str, tmp_path: Path) -> None:
    script(tmp_path / "bin" / "qex-only-here", "#!/bin/sh\necho found \"$@\"\n")
    assert "qex-only-here" not in os.environ.get("PATH", "")
    out, status = run(job(["qex-only-here", "a b"], env={"PATH": f"/nowhere:{tmp_path}/bin"}))
    assert (out, status) == ("found a b\n", 0)


def test_a_closed_candidate_is_passed_over_for_a_later_one(way: str, tmp_path: Path) -> None:
    script(tmp_path / "first" / "prog", "#!/bin/sh\necho first\n", mode=0o644)
    script(tmp_path / "second" / "prog", "#!/bin/sh\necho second\n")
    not_a_dir = script(tmp_path / "file", "")
    path = f"{tmp_path}/first:{not_a_dir}:{tmp_path}/second"
    out, _ = run(job(["prog"], env={"PATH": path}))
    assert out == "second\n"


def test_a_closed_candidate_alone_gives_eacces(way: str, tmp_path: Path) -> None:
    script(tmp_path / "first" / "prog", "#!/bin/sh\n", mode=0o644)
    path = f"{tmp_path}/first:{tmp_path}/missing"
    error = failure(job(["prog"], env={"PATH": path}))
    assert error.errno == errno.EACCES
    assert error.sentence == (
        "qex could not start `prog`: Permission denied; the file is not executable for this "
        "user, or a directory on its path is closed; check its permissions (chmod +x)")


def test_a_missing_program_gives_enoent(way: str, tmp_path: Path) -> None:
    error = failure(job(["qex-no-such-program"], env={"PATH": str(tmp_path)}))
    assert error.errno == errno.ENOENT
    assert error.sentence == (
        "qex could not start `qex-no-such-program`: No such file or directory; check the "
        "program name and the PATH in the job's environment")


def test_a_file_that_is_not_a_program_gives_enoexec(way: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    prog = script(tmp_path / "noshebang", f"touch {marker}\n")
    error = failure(job([str(prog)]))
    assert error.errno == errno.ENOEXEC
    assert error.sentence.startswith(f"qex could not start `{prog}`: Exec format error; the "
                                     "file is not a program")
    assert not marker.exists()  # no /bin/sh ran it


def test_a_relative_program_is_found_from_the_jobs_directory(way: str, tmp_path: Path) -> None:
    script(tmp_path / "here.sh", "#!/bin/sh\necho here\n")
    out, _ = run(job(["./here.sh"], cwd=tmp_path))
    assert out == "here\n"


def test_no_command_and_nul_bytes_are_refused_before_either_path(way: str) -> None:
    assert failure(job([])).sentence.startswith("the job has no command")
    error = failure(job(["true"], env={"PATH": PATH, "X": "a\0b"}))
    assert error.errno == errno.EINVAL and "NUL byte" in error.sentence


def test_an_environment_too_large_for_the_kernel_is_e2big(way: str, tmp_path: Path) -> None:
    big = {"PATH": f"{tmp_path}:{PATH}", "BIG": "x" * 200_000}  # over MAX_ARG_STRLEN
    error = failure(job(["true"], env=big))
    assert error.errno == errno.E2BIG
    assert "Argument list too long; the arguments and the environment" in error.sentence


# -- the directory ------------------------------------------------------------------------

def test_the_job_runs_in_its_directory_and_the_supervisor_stays(way: str,
                                                                tmp_path: Path) -> None:
    before = os.getcwd()
    out, _ = run(job(["pwd"], cwd=tmp_path))
    assert out.strip() == str(tmp_path)
    assert os.getcwd() == before


def test_a_missing_directory_is_the_chdir_sentence(way: str, tmp_path: Path) -> None:
    error = failure(job(["true"], cwd=tmp_path / "gone"))
    assert error.errno == errno.ENOENT
    assert error.sentence == (
        f"qex could not enter the job's directory {tmp_path / 'gone'}: No such file or "
        "directory; create it, or submit the job again from a directory that exists")


def test_the_job_gets_the_supervisors_umask(way: str) -> None:
    old = os.umask(0o027)
    try:
        out, _ = run(job(["sh", "-c", "umask"]))
    finally:
        os.umask(old)
    assert out.strip() == "0027"


# -- descriptors, session, signals ----------------------------------------------------------

@linux_only
def test_nothing_but_0_1_2_reaches_the_job(way: str) -> None:
    leaked = os.open(os.devnull, os.O_RDONLY)
    high = os.dup2(leaked, 99)  # inheritable, as a descriptor the supervisor inherited
    closed_on_exec = os.open(os.devnull, os.O_RDONLY)
    try:
        assert os.get_inheritable(high)
        out, _ = run(job(["sh", "-c", "ls /proc/$$/fd; readlink /proc/$$/fd/0"]))
    finally:
        for fd in (leaked, high, closed_on_exec):
            os.close(fd)
    assert out.split() == ["0", "1", "2", "/dev/null"]


@linux_only
def test_signals_are_default_and_unblocked(way: str) -> None:
    def bits(text: str, field: str) -> int:
        line = next(line for line in text.splitlines() if line.startswith(field + ":"))
        return int(line.split()[1], 16)

    # The supervisor ignores what its own start ignored: Python's SIGPIPE and SIGXFSZ, the
    # fork server's SIGINT, a background shell's SIGQUIT, nohup's SIGHUP. None of it is the
    # job's: it starts with every action at the default, however the coordinator began.
    ignored = (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGUSR2)
    before = {number: signal.signal(number, signal.SIG_IGN) for number in ignored}
    ours = Path("/proc/self/status").read_text()
    assert bits(ours, "SigIgn") & (1 << (signal.SIGPIPE - 1))  # Python's, not the job's
    assert bits(ours, "SigIgn") & (1 << (signal.SIGINT - 1))
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    try:
        out, _ = run(job(["cat", "/proc/self/status"]))
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
        for number, action in before.items():
            signal.signal(number, action)
    assert bits(out, "SigBlk") == 0
    # glibc's two internal signals may stay ignored (posix_spawn of an older glibc sets them
    # so in the child); nothing else may.
    assert bits(out, "SigIgn") & ~GLIBC_INTERNAL == 0


def test_a_closed_pipe_kills_the_job_with_sigpipe(way: str) -> None:
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    try:
        pid = spawn(job(["sh", "-c", "sleep 0.1; echo x; echo survived >&2"]), write_fd, 2)
    finally:
        os.close(write_fd)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGPIPE


@linux_only
def test_the_job_leads_its_own_session(way: str) -> None:
    with sleeper(job(["sleep", "30"])) as pid:
        assert os.getsid(pid) == pid
        assert os.getpgid(pid) == pid


# -- politeness ---------------------------------------------------------------------------

def _ioprio_of(pid: int) -> int:
    number = jobprocess._IOPRIO_SET_NR[os.uname().machine] + 1  # ioprio_get follows ioprio_set
    return int(ctypes.CDLL(None, use_errno=True).syscall(number, 1, pid))


@linux_only
def test_the_job_gets_its_nice_and_io_class_and_the_supervisor_keeps_its_own(way: str) -> None:
    own_nice = os.getpriority(os.PRIO_PROCESS, 0)
    own_io = _ioprio_of(0)
    nice = min(own_nice + 7, 19)
    with sleeper(job(["sleep", "30"], nice=nice, io="idle")) as pid:
        assert os.getpriority(os.PRIO_PROCESS, pid) == nice
        stat_fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        assert int(stat_fields[16]) == nice  # field 19 of /proc/<pid>/stat
        assert _ioprio_of(pid) >> 13 == 3  # the idle class
    assert os.getpriority(os.PRIO_PROCESS, 0) == own_nice
    assert _ioprio_of(0) == own_io


@linux_only
def test_no_nice_leaves_the_supervisors(way: str) -> None:
    with sleeper(job(["sleep", "30"])) as pid:
        assert os.getpriority(os.PRIO_PROCESS, pid) == os.getpriority(os.PRIO_PROCESS, 0)


# -- which path ---------------------------------------------------------------------------

@linux_only
def test_what_posix_spawn_cannot_carry_takes_the_fork_path(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    monkeypatch.delenv(spawn_module.FORK_VAR, raising=False)
    monkeypatch.delenv("QEX_PLATFORM", raising=False)
    fits = spawn_module._fast_path_fits
    assert fits(job(["true"]))
    assert not fits(job(["true"], preexec=lambda: None))
    assert not fits(job(["true"], oom_score_adj=100))
    assert not fits(job(["true"], cwd="relative/dir"))
    monkeypatch.setenv("QEX_PLATFORM", "portable")
    assert not fits(job(["true"]))
    monkeypatch.delenv("QEX_PLATFORM")
    monkeypatch.setenv(spawn_module.FORK_VAR, "1")
    assert not fits(job(["true"]))


@linux_only
def test_a_sandbox_step_runs_in_the_child_before_exec(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    monkeypatch.delenv(spawn_module.FORK_VAR, raising=False)
    monkeypatch.delenv("QEX_PLATFORM", raising=False)
    marker = tmp_path / "pid"

    def preexec() -> None:
        marker.write_text(str(os.getpid()))

    out, _ = run(job(["sh", "-c", "echo $$"], preexec=preexec))
    assert marker.read_text() == out.strip()  # it ran in the job's own process


@linux_only
def test_an_ambiguous_spawn_error_is_retried_by_the_fork_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(spawn_module.FORK_VAR, raising=False)
    monkeypatch.delenv("QEX_PLATFORM", raising=False)
    tries: list[str] = []

    def out_of_room(path: str, *args: object, **kwargs: object) -> int:
        tries.append(path)
        raise OSError(errno.EAGAIN, "no room")

    monkeypatch.setattr(os, "posix_spawn", out_of_room)
    out, status = run(job(["echo", "forked"]))
    assert (out, status) == ("forked\n", 0)
    assert tries  # the fast path was tried first


@linux_only
@pytest.mark.parametrize("path", ["/usr/bin:/bin", "/nowhere"])
def test_an_environment_name_the_exec_refuses_is_the_fork_paths_sentence(
        monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """posix_spawn refuses it before any path is walked; the fork path's child then reports
    it (stage exec, no errno), found or not."""
    monkeypatch.delenv("QEX_PLATFORM", raising=False)
    answers = []
    for forced in ("1", "0"):
        monkeypatch.setenv(spawn_module.FORK_VAR, forced)
        error = failure(job(["true"], env={"PATH": path, "A=B": "1"}))
        answers.append((error.errno, error.sentence))
    assert answers == [(0, "qex could not start `true`: an unknown fault; check the program "
                           "and its permissions")] * 2


def test_the_search_skips_known_missing_candidates_but_never_all(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A candidate stat() found missing is not spawned, except the last when no other was:
    an error that comes before the path walk must still be the answer."""
    tried: list[str] = []

    def refuse(path: str, *args: object, **kwargs: object) -> int:
        tried.append(path)
        raise OSError(errno.E2BIG, "too big")

    monkeypatch.setattr(os, "posix_spawn", refuse)
    missing = [("/a/x", errno.ENOENT), ("/b/x", errno.ENOTDIR), ("/c/x", errno.ENOENT)]
    with pytest.raises(fastspawn.StartFailed) as caught:
        fastspawn._spawn_first(missing, ["x"], {}, [])
    assert tried == ["/c/x"] and caught.value.code == errno.E2BIG
    tried.clear()
    with pytest.raises(fastspawn.StartFailed) as caught:
        fastspawn._spawn_first([("/a/x", errno.ENOENT), ("/b/x", 0), ("/c/x", errno.ENOTDIR)],
                               ["x"], {}, [])
    assert tried == ["/b/x"] and caught.value.code == errno.E2BIG


@linux_only
def test_prepare_starts_the_thread_that_spawn_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(spawn_module.FORK_VAR, raising=False)
    monkeypatch.delenv("QEX_PLATFORM", raising=False)
    monkeypatch.setattr(fastspawn, "_spawners", {})
    child = job(["true"], nice=3)
    assert spawn_module.prepare(child) is False  # started now: a spawn would wait for it
    prepared = fastspawn._spawners[(3, "none")]
    started = time.monotonic()
    _, status = run(child)
    assert status == 0 and time.monotonic() - started < 10
    assert fastspawn._spawners == {(3, "none"): prepared}
    assert spawn_module.prepare(child) is True  # the same thread, ready from before
    assert fastspawn._spawners == {(3, "none"): prepared}
    # The fork path waits for no thread.
    assert spawn_module.prepare(job(["true"], preexec=lambda: None, nice=4)) is True
    assert (4, "none") not in fastspawn._spawners


def test_the_escape_hatch_is_documented() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs"
    assert any(spawn_module.FORK_VAR in page.read_text() for page in docs.glob("*.md"))
