"""A fork server for supervisors: one process that has already imported the supervisor,
and forks a ready supervisor for each job the coordinator starts.

Why: a fresh `python -m qex.supervisor` spends most of its start-up importing modules
(tens of milliseconds of CPU per job). On a queue of short jobs that cost is the throughput,
and on two cores it is also stolen from the jobs. A forked child starts with the imports
done, and its pages are shared with the server until written.

Protocol, over the server's stdin/stdout pipes (the coordinator holds the other ends):
    coordinator -> server   `start <job-id>\\n`
    server -> coordinator   `<pid> <start-token>\\n`   or   `error <sentence>\\n`
The child leads its own session (so it outlives both the server and the coordinator), reads
nothing from the pipes, and writes its own messages to the job's `supervisor.log`.

The server reaps its children (SIGCHLD), so no supervisor is left a zombie on machines whose
PID 1 does not reap. When the coordinator goes away (end of file on stdin) the server stays
until its last supervisor has exited, still reaping, then exits.

Only used where no systemd scope is wanted: a scope needs the supervisor to be started by
systemd-run or moved by the user manager, which `qex.platform.launch` does.
"""

from __future__ import annotations

import os
import signal
import sys

# Import what a supervisor needs before the first fork, so each child has it already.
import qex.store.config_file
import qex.supervisor.main
import qex.supervisor.runner
from qex.core.names import is_uuid
from qex.platform import chaintrace, procs
from qex.store.paths import PathError, Paths


def _reap(_signum: int, _frame: object) -> None:
    for _pid in procs.reap_exited():
        pass


def _answer(text: str) -> None:
    data = (text.rstrip("\n") + "\n").encode("utf-8", "replace")
    while data:
        written = os.write(1, data)
        data = data[written:]


def _child(paths: Paths, job_id: str, log_fd: int) -> None:  # pragma: no cover - forked
    """Become the supervisor of `job_id`; never returns."""
    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.closerange(3, 1 << 16)
        code = qex.supervisor.main.supervise(paths, job_id)
    except BaseException as exc:
        try:
            os.write(2, f"qex supervisor: {exc!r}\n".encode("utf-8", "replace"))
        except OSError:
            pass
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os._exit(code)


def _start(paths: Paths, job_id: str) -> None:
    try:
        log_fd = os.open(paths.job_dir(job_id) / "supervisor.log",
                         os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        _answer(f"error qex could not open the supervisor log of {job_id}: {exc.strerror}")
        return
    qex.supervisor.main.remember_config(paths)
    sys.stdout.flush()
    sys.stderr.flush()
    chaintrace.mark("fs.fork", job_id)
    try:
        pid = os.fork()
    except OSError as exc:
        os.close(log_fd)
        _answer(f"error qex could not fork a supervisor: {exc.strerror}")
        return
    if pid == 0:  # pragma: no cover - the child
        _child(paths, job_id, log_fd)
    os.close(log_fd)
    _answer(f"{pid} {procs.start_token(pid) or ''}")
    chaintrace.mark("fs.answered", job_id)


def preload() -> None:
    """Import, once and before any fork, what every supervisor would import for itself.

    Measured in a forked child: without this, each supervisor imported ctypes (and opened
    libc through it), the sandbox choice, the process-group sandbox, the pool code, the
    usage store and the hook module on its way to `running`: milliseconds of CPU per job,
    and private pages in every supervisor. The config parser (`tomllib`, with `datetime` and
    `string`) was the largest of them: read in every child, it cost more than the fork. Then
    freeze the heap, so that the children's garbage collector does not write to (and so copy)
    the pages they share with this process.
    """
    import gc
    import tomllib  # noqa: F401 (the config parser's, imported lazily: 10+ ms in each child)

    import qex.core.pools
    import qex.platform.procgroup
    import qex.platform.select
    import qex.store.usage
    import qex.supervisor.hook  # noqa: F401
    from qex.platform import jobprocess

    try:
        jobprocess._libc()
    except OSError:
        pass
    gc.collect()
    gc.freeze()


def serve() -> int:
    """Answer `start` requests until stdin closes, then outlive the last supervisor."""
    try:
        paths = Paths.from_env()
    except PathError as exc:
        _answer(f"error {exc}")
        return 1
    preload()
    signal.signal(signal.SIGCHLD, _reap)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is not for us
    buffer = b""
    while True:
        try:
            chunk = os.read(0, 4096)
        except InterruptedError:
            continue
        if not chunk:
            break
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            words = line.decode("utf-8", "replace").split()
            if len(words) == 2 and words[0] == "start" and is_uuid(words[1]):
                _start(paths, words[1].lower())
            elif words:
                _answer(f"error the fork server does not know the request `{line[:80]!r}`")
    # The coordinator is gone. Keep reaping our supervisors until the last one exits.
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
