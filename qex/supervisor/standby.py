"""`python -m qex.supervisor --standby`: a supervisor that starts before its job.

With the systemd-run backend a scope can only be made around a new process: systemd-run
makes it around itself and then execs the supervisor, which imports its modules only then.
In the guest of tests/vm that start took most of a second between a job's admission and its
exec. So the coordinator starts the next supervisor ahead of need, through systemd-run in a
scope of its own (`qex.platform.launch`), and this process gets ready in it and waits. The
pystemd backend takes one too where systemd-run is installed: its own way to a scope, a
D-Bus call at the job's admission, holds the coordinator for tens of milliseconds each time.

The wait is a read of the descriptor named in `QEX_SUPERVISOR_GO_FD`. The coordinator writes
one line there, the id of the job, once it has written that job's `starting` record and
named this process in its `supervisor.pid`: that line is the go, and from there this is the
supervisor of that job like any other (`qex.supervisor.main.supervise`). End-of-file before
a line means the coordinator no longer needs a standby (it stopped, or its config no longer
asks for scopes): the process exits and has touched nothing.

Until its job comes, the process writes to the coordinator's log; from then on, to the job's
`supervisor.log`.
"""

from __future__ import annotations

import os

from qex.core.names import is_uuid
from qex.platform import chaintrace, collector
from qex.store import jobs
from qex.store.paths import PathError, Paths
from qex.supervisor.main import GO_FD_VAR, remember_config, supervise
from qex.supervisor.runner import say, say_to_new_log
from qex.supervisor.warm import load_job_modules

#: A job id and its newline, with room to spare; anything longer is not a job id.
_LINE_BYTES = 128


def serve() -> int:
    """Get ready, wait for a job id, then supervise that job; the exit code."""
    chaintrace.mark("sup.standby", "-")
    raw = os.environ.pop(GO_FD_VAR, None)
    if raw is None or not raw.isdigit():
        say(f"a standby supervisor needs its go descriptor in {GO_FD_VAR} (got {raw!r})")
        return 2
    try:
        paths = Paths.from_env()
    except PathError as exc:
        say(str(exc))
        return 1
    load_job_modules()
    remember_config(paths)
    settle_in_scope()
    collector.release()  # held since `qex.supervisor.__main__.entry`
    chaintrace.mark("sup.standby.ready", "-")
    line = read_line(int(raw))
    if not line:
        return 0  # no job came: the coordinator let this standby go
    job_id = line.strip().lower()
    if not is_uuid(job_id):
        say(f"a standby supervisor was sent {line[:64]!r}, which is not a job id; it stops")
        return 2
    chaintrace.mark("sup.standby.job", job_id)
    try:
        log = jobs.open_supervisor_log(paths.job_dir(job_id))
    except OSError as exc:
        say(f"qex could not open the supervisor log of the job {job_id} ({exc.strerror}); "
            "its messages stay in this log")
    else:
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        say_to_new_log()
    return supervise(paths, job_id)


def settle_in_scope() -> None:
    """Do now what opening a job's cgroup sandbox does first, since it does not depend on the
    job (`qex.platform.cgroup_sandbox.settle`): move into the scope's `supervisor/` leaf and
    enable the controllers for the leaves. In the guest of tests/vm that was 60 ms after the
    go. When the job comes, the sandbox finds it all done and only checks. Any failure is
    left for that open, which says why in the job's record; outside a qex scope there is
    nothing to do."""
    from qex.platform.cgroup import CgroupError, CgroupFS, cgroup_of
    from qex.platform.cgroup_sandbox import settle
    from qex.platform.scope import scope_in_path

    own = cgroup_of("self")
    found = scope_in_path(own) if own else None
    if found is None:
        return
    try:
        settle(CgroupFS(), *found)
    except (CgroupError, OSError):
        pass


def read_line(fd: int) -> str:
    """What the coordinator wrote on `fd` up to its first newline ("" at end-of-file without
    one, or when the descriptor fails); `fd` is closed afterwards."""
    data = b""
    try:
        while b"\n" not in data and len(data) < _LINE_BYTES:
            chunk = os.read(fd, _LINE_BYTES - len(data))  # retried after a signal (PEP 475)
            if not chunk:
                break
            data += chunk
    except OSError as exc:
        say(f"qex could not read the job id on descriptor {fd}: {exc}")
        data = b""
    finally:
        try:
            os.close(fd)
        except OSError:
            pass
    if b"\n" not in data:
        return ""  # cut short: the coordinator never finished the go
    return data.split(b"\n", 1)[0].decode("ascii", "replace")
