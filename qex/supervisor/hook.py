"""The stop hook (`[hooks] on_stop`): one command when a job reaches a final state.

Exactly once per job: whoever makes a job final (the supervisor, or the coordinator for a
cancel, a skip, an expiry or a recovery, through `python -m qex.supervisor --hook <id>`) calls
`run_stop_hook`, and only the caller that creates `hook.ran` with O_EXCL runs the command. A
crash between that claim and the run loses the message, on purpose: a notification that
arrives twice is worse than one that is lost.

The config is read afresh each time, so a hook that a person adds or removes applies to the
next job that stops. The command runs directly (no shell) in the job's directory (or `/` when
it is gone), in a process group of its own, with the job described ONLY in environment
variables, never in its argv. Its output goes to `hook.log`, at most 1 MiB: past that, the
pipe is closed and the hook stopped. A hook that runs past `[hooks] timeout` gets TERM, then
KILL 2 seconds later. A verdict line is appended to `hook.log`. Nothing the hook does changes
the job's record.
"""

from __future__ import annotations

import os
import selectors
import signal
import sys
import time
from pathlib import Path

from qex.core.names import printable_line, safe_name, short_id
from qex.core.records import JobStatus
from qex.core.signal_words import signal_name
from qex.core.states import State
from qex.core.units import MIB, format_duration
from qex.platform import jobprocess, procs
from qex.store import jobs
from qex.store.paths import Paths
from qex.supervisor.children import ChildWatch, Reaper
from qex.supervisor.spawn import Child, SpawnError, spawn

#: The hook's output stops growing here; the size is fixed, unlike `[logs] max_bytes`.
OUTPUT_CAP = MIB
#: Between TERM and KILL, and the wait for the pipe once the hook exited.
GRACE_SECS = 2.0


def hook_env(status: JobStatus, job_dir: Path) -> dict[str, str]:
    """The variables that describe the job to the hook; empty text where a value is missing."""
    ran_to_end = status.state in (State.COMPLETED, State.FAILED) and status.exit_code is not None
    elapsed = ""
    if status.started_at is not None and status.finished_at is not None:
        elapsed = str(max(0, round(status.finished_at - status.started_at)))
    max_rss = (status.usage or {}).get("max_rss")
    values = {
        "QEX_JOB_ID": status.id,
        "QEX_JOB_NAME": safe_name(status.name),
        "QEX_STATE": status.state,
        "QEX_EXIT_CODE": str(status.exit_code) if ran_to_end else "",
        "QEX_SIGNAL": str(status.signal) if status.signal is not None else "",
        "QEX_ELAPSED_SECS": elapsed,
        "QEX_CWD": status.cwd,
        "QEX_JOB_DIR": str(job_dir),
        "QEX_ATTEMPTS": str(status.attempts),
        "QEX_MAX_RSS": str(max_rss) if isinstance(max_rss, int) else "",
        "QEX_TAGS": " ".join(status.tags),
    }
    return {key: printable_line(value) for key, value in values.items()}


def claim(job_dir: Path, status: JobStatus, origin: str) -> bool:
    """Take the one right to run the hook for this job; False when someone already took it."""
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        fd = os.open(job_dir / jobs.HOOK_RAN, flags, 0o600)
    except OSError:
        return False
    try:
        os.write(fd, f"{status.state} {status.id} {int(time.time())} {origin}\n".encode())
    except OSError:
        pass
    finally:
        os.close(fd)
    return True


def _say(message: str) -> None:
    print(f"qex: {message}", file=sys.stderr, flush=True)


def run_stop_hook(
    paths: Paths, job_id: str, *, origin: str,
    children: ChildWatch | None = None, reaper: Reaper | None = None,
) -> str | None:
    """Run the hook for a final job if the config asks for it; the verdict, or None if none ran."""
    job_dir = paths.job_dir(job_id)
    from qex.core.config import ConfigError

    try:
        from qex.store.config_file import load_config

        hooks = load_config(paths).hooks
        problem = None
    except (ConfigError, OSError, ImportError) as exc:
        hooks, problem = None, exc
    if hooks is not None and not hooks.on_stop:
        return None  # the usual case: no hook, and no record to read for it
    status = jobs.read_status(job_dir)
    if status is None or not status.final:
        return None
    if hooks is None:
        _say(f"the stop hook of the job {short_id(job_id)} did not run, because the config file "
             f"could not be read: {problem}")
        return None
    if status.state not in hooks.on_stop_states:
        return None
    if not claim(job_dir, status, origin):
        return None
    own = children is None
    watch = children if children is not None else ChildWatch()
    try:
        verdict = _execute(list(hooks.on_stop), status, job_dir, timeout=hooks.timeout,
                           children=watch, reaper=reaper or Reaper())
    finally:
        if own:
            watch.close()
    try:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        fd = os.open(job_dir / jobs.HOOK_LOG, flags, 0o600)
        try:
            os.write(fd, f"\nqex: the stop hook {verdict}.\n".encode())
        finally:
            os.close(fd)
    except OSError:
        pass
    _say(f"the stop hook of the job {short_id(job_id)} {verdict}")
    return verdict


def _execute(argv: list[str], status: JobStatus, job_dir: Path, *, timeout: float,
             children: ChildWatch, reaper: Reaper) -> str:
    env = dict(os.environ)
    env.update(hook_env(status, job_dir))
    cwd = status.cwd if os.path.isdir(status.cwd) else "/"
    try:
        log_fd = os.open(job_dir / jobs.HOOK_LOG,
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        return f"did not run: qex could not create {job_dir / jobs.HOOK_LOG}: {exc.strerror}"
    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    try:
        try:
            pid = spawn(Child(argv=argv, env=env, cwd=cwd), write_fd, write_fd)
        except SpawnError as exc:
            os.close(read_fd)
            return (f"did not start ({exc.sentence}); fix `[hooks] on_stop` in the config file. "
                    "The job keeps its result")
        finally:
            os.close(write_fd)
        stopped, wait_status = _follow(pid, read_fd, log_fd, deadline=started + timeout,
                                       children=children, reaper=reaper)
    finally:
        os.close(log_fd)
    took = format_duration(time.monotonic() - started)
    if stopped == "timeout":
        return (f"ran longer than its limit of {format_duration(timeout)} (`[hooks] timeout`), "
                "so qex stopped it")
    if stopped == "output":
        return "wrote more than 1MB, so qex closed its output and stopped it"
    if os.WIFSIGNALED(wait_status):
        name = signal_name(os.WTERMSIG(wait_status))
        return f"was stopped by the signal {name} after {took}"
    code = os.WEXITSTATUS(wait_status)
    if code == 0:
        return f"ran in {took}"
    return (f"exited with the code {code} after {took}; its output is in `qex logs "
            f"{short_id(status.id)} --hook`")


def _follow(pid: int, read_fd: int, log_fd: int, *, deadline: float, children: ChildWatch,  # noqa: C901, PLR0912, PLR0915 (one event loop)
            reaper: Reaper) -> tuple[str | None, int]:
    """Copy the hook's output until it exits; returns (why qex stopped it, wait status)."""
    selector = selectors.DefaultSelector()
    os.set_blocking(read_fd, False)
    selector.register(read_fd, selectors.EVENT_READ, "pipe")
    selector.register(children.fileno(), selectors.EVENT_READ, "chld")
    pidfd = jobprocess.pidfd_open(pid)
    if pidfd is not None:
        selector.register(pidfd, selectors.EVENT_READ, "pidfd")
    pipe_open = True
    written = 0
    stopped: str | None = None
    kill_at: float | None = None
    status: int | None = None
    pipe_by = 0.0
    try:
        while status is None or pipe_open:
            now = time.monotonic()
            if status is None:
                wait = (kill_at if kill_at is not None else deadline) - now
            else:
                wait = pipe_by - now
            for key, _ in selector.select(max(0.0, wait)):
                if key.data == "pipe":
                    try:
                        data = os.read(read_fd, 65536)
                    except BlockingIOError:
                        continue
                    if data:
                        keep = data[: max(0, OUTPUT_CAP - written)]
                        written += len(data)
                        if keep:
                            try:
                                os.write(log_fd, keep)
                            except OSError:
                                pass
                        if written > OUTPUT_CAP and stopped is None:
                            stopped = "output"
                    if not data or stopped == "output":
                        selector.unregister(read_fd)
                        os.close(read_fd)
                        pipe_open = False
                        if stopped == "output" and status is None:
                            procs.signal_group(pid, signal.SIGTERM)
                            kill_at = time.monotonic() + GRACE_SECS
                    continue
                if key.data == "chld":
                    children.drain()
                ended = reaper.reap(pid if status is None else None, kill_leftovers=False)
                if status is None and ended is not None:
                    status = ended
                    pipe_by = time.monotonic() + GRACE_SECS
                    if pidfd is not None:
                        selector.unregister(pidfd)
            now = time.monotonic()
            if status is None:
                if stopped is None and now >= deadline:
                    stopped = "timeout"
                    procs.signal_group(pid, signal.SIGTERM)
                    kill_at = now + GRACE_SECS
                elif kill_at is not None and now >= kill_at:
                    procs.signal_group(pid, signal.SIGKILL)
                    kill_at = now + 3600.0
            elif pipe_open and now >= pipe_by:
                break
    finally:
        if pipe_open:
            selector.unregister(read_fd)
            os.close(read_fd)
        if pidfd is not None:
            os.close(pidfd)
        selector.close()
    assert status is not None
    return stopped, status
