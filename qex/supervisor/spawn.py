"""Start a program exactly as the record says: argv, environment, directory, politeness.

No shell is involved: argv[0] is searched on the JOB's PATH (the one in its environment; with
none, the system default), and a file that is not a program fails with ENOEXEC instead of
being handed to /bin/sh. Everything between fork and exec runs in the child, in this order:
signals at their default and an empty mask, new session (so the job is its own process
group), the sandbox's preexec (join the job cgroup), the standard descriptors, the
directory, nice, the I/O class, oom_score_adj, exec.

A failure in the child is sent back over a close-on-exec pipe as `<stage>:<errno>`, so the
parent learns it before it writes `running`, and turns it into one sentence with a remedy.

That is the fork path. Where nothing but posix_spawn's attributes, a thread's nice, I/O class
and directory are needed (Linux, no sandbox step, oom_score_adj 0, an absolute directory),
the job is started by `qex.supervisor.fastspawn` instead: the same job, the same sentences,
without a copy of the supervisor's page tables and without Python in the child (the chain's
"fork and exec" step went from about 5.7 ms to about 1.5 ms). `QEX_SPAWN_FORK=1` in the
supervisor's environment forces the fork path (to compare the two, or as a way out should a
system mishandle posix_spawn).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # the C functions, without signal's enums
import errno
import os
import warnings
from collections.abc import Callable, Mapping

from qex.core.model import dataclass
from qex.platform import host, jobprocess
from qex.supervisor import fastspawn
from qex.supervisor.children import forget_in_child

#: `QEX_SPAWN_FORK=1`: every job by the fork path.
FORK_VAR = "QEX_SPAWN_FORK"


@dataclass
class Child:
    """What to start and how."""

    argv: list[str]
    env: Mapping[str, str]
    cwd: str
    nice: int | None = None
    io: str = "none"
    oom_score_adj: int = 0
    #: Run in the child between fork and exec (the cgroup sandbox joins its job leaf); None
    #: when nothing must run there, which lets the job start by posix_spawn.
    preexec: Callable[[], None] | None = None


class SpawnError(Exception):
    """The program did not start; `sentence` says why and what to do."""

    def __init__(self, sentence: str, code: int) -> None:
        super().__init__(sentence)
        self.sentence = sentence
        self.errno = code


def prepare(child: Child) -> bool:
    """Start now, without waiting for it, what `spawn(child)` will need: the spawner thread
    of the fast path sets itself up while the caller does other work (nothing for a job
    that takes the fork path).

    True when `spawn(child)` can go at once; False when it would wait for a thread that
    this call started, and the caller has other work to do first."""
    if _fast_path_fits(child):
        return fastspawn.prepare(child.nice, child.io)
    return True


def spawn(child: Child, stdout_fd: int, stderr_fd: int) -> int:
    """Start the job; returns the pid once exec succeeded, raises SpawnError otherwise."""
    program = _check(child)
    env = dict(child.env)
    if _fast_path_fits(child):
        try:
            pid = fastspawn.start(child, env, stdout_fd, stderr_fd)
        except fastspawn.StartFailed as failed:
            raise SpawnError(_sentence(program, child.cwd, failed.stage, failed.code),
                             failed.code) from None
        if pid is not None:
            return pid
    return _fork_spawn(child, env, program, stdout_fd, stderr_fd)


def _check(child: Child) -> str:
    """The program's name, once the command is known to be one that can be started."""
    program = child.argv[0] if child.argv else ""
    if not child.argv or not program:
        raise SpawnError("the job has no command to run; submit it again with a command", 0)
    # One search of one string, not one per text: a job's environment has dozens of them.
    if "\0" in "".join([*child.argv, *child.env.keys(), *child.env.values(), child.cwd]):
        raise SpawnError(
            f"qex could not start `{program}`: the command, the directory or the environment "
            "holds a NUL byte, which no program can receive; remove it and submit the job again",
            errno.EINVAL,
        )
    return program


def _fast_path_fits(child: Child) -> bool:
    """True when posix_spawn can give the job exactly what the fork path gives it.

    Not with a sandbox step (it must run in the child before exec: the job never runs outside
    its cgroup), not with an oom_score_adj (it belongs to the whole process, so no thread can
    carry it to the child), not with a relative directory (relative to the supervisor's own,
    which the spawning thread does not share), and only on Linux (where nice, the I/O class
    and, after unshare, the directory are a thread's own).
    """
    return (child.preexec is None and child.oom_score_adj == 0
            and os.path.isabs(child.cwd) and host.linux()
            and os.environ.get(FORK_VAR) != "1")


def _fork_spawn(child: Child, env: dict[str, str], program: str, stdout_fd: int,
                stderr_fd: int) -> int:
    """Fork, set up in the child, exec; the child's failure comes back over a pipe."""
    set_ioprio = jobprocess.ioprio_setter(child.io)
    report_r, report_w = os.pipe()
    try:
        pid = _fork()
    except OSError as exc:
        os.close(report_r)
        os.close(report_w)
        code = exc.errno or 0
        raise SpawnError(_sentence(program, child.cwd, "fork", code), code) from None
    if pid == 0:  # pragma: no cover - runs in the child, which execs or exits
        _child(child, env, stdout_fd=stdout_fd, stderr_fd=stderr_fd, report_w=report_w,
               set_ioprio=set_ioprio)
    os.close(report_w)
    report = _read_report(report_r)
    if not report:
        return pid
    _wait(pid)
    stage, _, code_text = report.decode("ascii", "replace").partition(":")
    code = int(code_text) if code_text.isdigit() else 0
    raise SpawnError(_sentence(program, child.cwd, stage, code), code)


def _fork() -> int:
    """os.fork(); once a spawner thread exists, without Python 3.12's warning about forking a
    threaded process: those threads wait on a lock of their own that the child never takes,
    and the child runs nothing but `_child`."""
    if not fastspawn.started():
        return os.fork()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def _read_report(report_r: int) -> bytes:
    """All the child wrote before its exec closed the pipe (nothing: the exec succeeded)."""
    report = b""
    while True:
        try:
            chunk = os.read(report_r, 64)
        except InterruptedError:
            continue
        if not chunk:
            break
        report += chunk
    os.close(report_r)
    return report


def _wait(pid: int) -> None:
    """Reap a child whose exec failed."""
    while True:
        try:
            os.waitpid(pid, 0)
            return
        except InterruptedError:
            continue
        except ChildProcessError:
            return


def _child(  # pragma: no cover - runs in the child
    child: Child, env: dict[str, str], *, stdout_fd: int, stderr_fd: int, report_w: int,
    set_ioprio: Callable[[], None] | None,
) -> None:
    stage = "setup"
    try:
        forget_in_child()
        # An exec keeps an ignored signal ignored (see `JOB_DEFAULT_SIGNALS`).
        for number in jobprocess.JOB_DEFAULT_SIGNALS:
            _signal.signal(number, _signal.SIG_DFL)
        _signal.pthread_sigmask(_signal.SIG_SETMASK, ())
        os.setsid()
        if child.preexec is not None:
            stage = "sandbox"
            child.preexec()
            stage = "setup"
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(stdout_fd, 1)
        os.dup2(stderr_fd, 2)
        # Nothing but 0-2 and the report pipe (close-on-exec) reaches the job.
        os.closerange(3, report_w)
        os.closerange(report_w + 1, 1 << 16)
        stage = "chdir"
        os.chdir(child.cwd)
        stage = "setup"
        jobprocess.be_polite(child.nice, set_ioprio)
        jobprocess.set_oom_score_adj(child.oom_score_adj)
        stage = "exec"
        os.execvpe(child.argv[0], child.argv, env)
    except OSError as exc:
        _report(report_w, stage, exc.errno or 0)
    except BaseException:
        _report(report_w, stage, 0)
    os._exit(127)


def _report(fd: int, stage: str, code: int) -> None:  # pragma: no cover - runs in the child
    try:
        os.write(fd, f"{stage}:{code}".encode("ascii"))
    except OSError:
        pass


_REMEDIES: dict[int, str] = {
    errno.ENOENT: "check the program name and the PATH in the job's environment",
    errno.EACCES: (
        "the file is not executable for this user, or a directory on its path is closed; "
        "check its permissions (chmod +x)"
    ),
    errno.EPERM: "the system does not permit this user to run it; check its permissions",
    errno.ENOEXEC: (
        "the file is not a program this machine can run; a script needs a first line such as "
        "#!/bin/sh, or name its interpreter in the command"
    ),
    errno.E2BIG: (
        "the arguments and the environment together are too large for the kernel; pass less "
        "in the environment (for example with --env-capture minimal)"
    ),
    errno.EISDIR: "that path is a directory; name the program inside it",
    errno.ENOTDIR: "a part of the path is not a directory; check the program path",
    errno.ELOOP: "the path has too many symbolic links; check where they point",
    errno.ENAMETOOLONG: "the program path is too long; use a shorter one",
    errno.ETXTBSY: "another process is still writing the file; wait until it is complete",
    errno.ENOMEM: "the machine had no memory to start it; try again when memory is free",
    errno.EAGAIN: "the system has no room for another process now; try again later",
}


def _sentence(program: str, cwd: str, stage: str, code: int) -> str:
    reason = os.strerror(code) if code else "an unknown fault"
    if stage == "chdir":
        return (
            f"qex could not enter the job's directory {cwd}: {reason}; create it, or submit the "
            "job again from a directory that exists"
        )
    if stage == "sandbox":
        return (
            f"qex could not put `{program}` into its memory sandbox: {reason}; run "
            "`qex config show` to see the state of enforcement, or set `[enforce] mode` = \"off\""
        )
    if stage == "fork":
        return f"qex could not create a process for `{program}`: {reason}; try again later"
    remedy = _REMEDIES.get(code, "check the program and its permissions")
    return f"qex could not start `{program}`: {reason}; {remedy}"
