"""A fork server for supervisors: one process that has already imported the supervisor,
and forks a ready supervisor for each job the coordinator starts.

Why: a fresh `python -m qex.supervisor` spends most of its start-up importing modules
(tens of milliseconds of CPU per job). On a queue of short jobs that cost is the throughput,
and on two cores it is also stolen from the jobs. A forked child starts with the imports
done, and its pages are shared with the server until written.

Protocol, over the server's stdin/stdout pipes (the coordinator holds the other ends):
    coordinator -> server   `hold <job-id> <seconds>\\n`   or   `park <job-id> <seconds>\\n`
    server -> coordinator   `<pid> <start-token>\\n`   or   `error <sentence>\\n`
The child leads its own session (so it outlives both the server and the coordinator), reads
nothing from the pipes, and writes its own messages to the job's `supervisor.log`.

`hold` is for a job that must run in a systemd scope (pystemd backend): the child is forked
with the go signal (`GO_SIGNAL`) blocked. It reads the job's spec and the config (reads that
touch nothing, made while the coordinator works), then waits for that signal from the
coordinator before it reads the record or touches anything of the job; the coordinator sends
it only after the user manager has moved the child into the job's scope and /proc shows it
there. A signal from any other sender is ignored. Without a go within `<seconds>` (say the
coordinator died between the fork and its check) the child exits and leaves the job to
whoever comes next. Blocking the signal before the fork means a go that arrives before the
child starts waiting stays pending instead of being lost (or killing the child by the
default action).

`park` is the same wait without a scope: the coordinator asks for the child before it
writes the job's `starting` record and sends the go once that record is written, so the
fork happens while the coordinator waits for its sync instead of after it (a supervisor must
never touch a job whose record does not say `starting` yet: a crash in between would leave a
record that says `queued` for a job that runs).

The child of a request is usually forked before the request (`Spare`): the server keeps one
supervisor forked ahead, blocked on a socket pair, and a request hands it the job's id and
its log. The next spare is forked after the answer. So neither the fork nor the child's first
writes to the pages it shares with the server sit between one job's end and the next job's
exec; the fork on request remains for a spare that is gone.

A spare that supervised a job without a scope, and left its process as it found it, serves
again (`_serve_jobs`): it says `free` on its socket pair and waits for the next hand-out, up
to `JOBS_PER_SUPERVISOR` jobs. The server takes such a supervisor before its fresh spare, so
a queue of short jobs forks no supervisor per job: the fork, the first writes to the shared
pages and the exit were a third of a job's CPU on two cores. At most `MAX_FREE` wait; the
server lets them go once no request came for `FREE_IDLE_SECS`, so an idle queue keeps only
the one spare, and an idle server sleeps with no timer.

The server reaps its children (SIGCHLD), so no supervisor is left a zombie on machines whose
PID 1 does not reap. When the coordinator goes away (end of file on stdin) the server lets
its spare and its free supervisors go and stays until its last supervisor has exited, still
reaping, then exits.

Every child waits for its go: the coordinator names it in the job's `supervisor.pid` before
it sends the go, so that a coordinator killed at any moment leaves a disk that names every
supervisor that may touch a job. Used for every job without a systemd scope (`park`), and
(`hold`) for jobs whose scope the user manager makes through pystemd. The systemd-run
backend cannot use it: systemd-run makes its scope around its own new process, so the
supervisor must be a fresh exec there.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]
import os
import select
import signal
import socket
import sys
import time
from typing import ClassVar

# Import what a supervisor needs before the first fork, so each child has it already.
import qex.store.config_file
import qex.store.jobs
import qex.supervisor.main
import qex.supervisor.runner
from qex.core.names import is_uuid
from qex.platform import chaintrace, procs
from qex.platform.cgroup import cgroup_of
from qex.platform.held import GO_SIGNAL
from qex.platform.scope import scope_in_path
from qex.store.paths import PathError, Paths

#: `si_code` of a signal sent by kill(2), pidfd_send_signal(2) and the like (Linux, macOS);
#: a kernel-made signal or a queued one carries another code and is no go.
_SI_USER = 0
#: The longest wait a `hold` request may ask for; longer values are cut to this.
MAX_HOLD_SECONDS = 600.0


def wait_for_go(sender: int, timeout: float) -> bool:
    """Wait, with `GO_SIGNAL` blocked, for that signal from the process `sender`.

    True on the go; False when `timeout` seconds pass without it. A `GO_SIGNAL` from any
    other process (or not sent by kill) is consumed and ignored: only the coordinator that
    checked the scope may release a supervisor.
    """
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        info = signal.sigtimedwait([GO_SIGNAL], remaining)
        if info is None:
            return False
        if info.si_pid == sender and info.si_code == _SI_USER:
            return True


def _released(sender: int, timeout: float, mask: set[int | signal.Signals], job_id: str,
              scoped: bool = True) -> bool:
    """The held child's gate: the go from `sender`, then (`scoped`) a look at /proc that it
    really sits in a qex scope. False means: leave the job alone and exit."""
    got = wait_for_go(sender, timeout)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # the job must not inherit the block
    chaintrace.mark("sup.held.go" if got else "sup.held.timeout", job_id)
    if not got:
        os.write(2, f"qex supervisor: no go for the job {job_id} within {timeout:g}s; this "
                    "held supervisor exits without touching the job\n".encode())
        return False
    if not scoped:
        return True
    where = cgroup_of("self")
    if where is None or scope_in_path(where) is None:
        os.write(2, f"qex supervisor: released for the job {job_id} outside a qex scope (in "
                    f"{where or 'no cgroup v2'}); this supervisor exits without touching the "
                    "job\n".encode())
        return False
    return True


def _reap(_signum: int, _frame: object) -> None:
    for _pid in procs.reap_exited():
        pass


def _answer(text: str) -> None:
    data = (text.rstrip("\n") + "\n").encode("utf-8", "replace")
    while data:
        written = os.write(1, data)
        data = data[written:]


#: For a held child: (the only sender of its go, the seconds it waits, the mask to restore,
#: whether the go promises a scope that the child checks).
Hold = tuple[int, float, "set[int | signal.Signals]", bool]


def _child(paths: Paths, job_id: str, log_fd: int,  # pragma: no cover - forked
           hold: Hold) -> None:
    """Become the supervisor of `job_id` after its go; never returns."""
    code = 1
    try:
        _detach()
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.closerange(3, 1 << 16)
        code = _supervise(paths, job_id, hold)
    except BaseException as exc:
        _said(exc)
    finally:
        _leave(code)


def _detach() -> None:  # pragma: no cover - forked
    """A forked child's first steps: a session of its own, the default SIGCHLD, no stdin."""
    os.setsid()
    # The C function, not `signal.signal`: the wrapper turns the old handler (`_reap`)
    # into an enum member, fails, and pays for a ValueError: as the first call in a
    # forked child, 0.5 ms and 100 page faults (copies of pages shared with this
    # server), where the C function took 0.08 ms and 40.
    _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    if null != 0:
        os.close(null)


def _supervise(paths: Paths, job_id: str, hold: Hold) -> int:  # pragma: no cover
    return _supervise_one(paths, job_id, hold)[0]


def _supervise_one(paths: Paths, job_id: str,  # pragma: no cover - forked
                   hold: Hold) -> tuple[int, bool]:
    """The exit code, and whether the job ended settled (`qex.supervisor.main.run_job`)."""
    sender, seconds, mask, scoped = hold
    return qex.supervisor.main.run_job(
        paths, job_id, gate=lambda: _released(sender, seconds, mask, job_id, scoped),
        spawner_early=not scoped)


def _said(exc: BaseException) -> None:  # pragma: no cover - forked
    try:
        os.write(2, f"qex supervisor: {exc!r}\n".encode("utf-8", "replace"))
    except OSError:
        pass


def _leave(code: int) -> None:  # pragma: no cover - forked
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)


class Spare:
    """A supervisor forked ahead of need, waiting for the job it will supervise.

    Why: the fork (a copy of this server's page tables) and the first writes to the pages
    the child shares with this server took longer than the coordinator's sync of the
    `starting` record that they were meant to overlap, so they were the slower branch of
    every job's start. The spare pays for both while the queue waits for a slot; the
    request of the next job only hands it the job's id and its log over a socket pair.

    The spare blocks nothing but its read: no timer, no wake-up. It exits when the socket
    pair closes (this server stops, or it is replaced), so it never outlives the server.
    """

    def __init__(self, pid: int, channel: socket.socket, token: str | None) -> None:
        self.pid = pid
        self.channel = channel
        self.token = token

    @classmethod
    def fork(cls) -> Spare | None:
        """A new spare, or None when the fork failed (the next job is forked on request)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sys.stdout.flush()
        sys.stderr.flush()
        # Blocked before the fork, as for a held child: a go that arrives before the spare
        # waits for it stays pending instead of killing it.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {GO_SIGNAL})
        try:
            pid = os.fork()
        except OSError:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            ours.close()
            theirs.close()
            return None
        if pid == 0:  # pragma: no cover - the child
            ours.close()  # else the spare would never read the end of file of its channel
            _spare_child(theirs, mask)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        theirs.close()
        return cls(pid, ours, procs.start_token(pid))

    def hand(self, request: str, log_fd: int) -> bool:
        """Give the spare its job (`request` as the spare reads it) and its log; False when
        the spare is gone, so the caller forks a supervisor instead."""
        try:
            socket.send_fds(self.channel, [request.encode()], [log_fd])
        except OSError:
            return False
        return True

    def close(self) -> None:
        """Let the spare go: it reads end-of-file and exits untouched."""
        self.channel.close()


#: What a spare reads: `<verb> <job-id> <seconds> <sender>` (verb `start`, `hold` or `park`).
_SPARE_REQUEST_BYTES = 256
#: What a supervisor that may serve again says on its socket pair once its job is settled.
FREE = b"free"
#: How many jobs one forked supervisor serves before it exits: its heap, and the pages it
#: copied from the server, grow a little with each, and a fresh fork resets both.
JOBS_PER_SUPERVISOR = 64
#: How many supervisors that served a job may wait for the next; more are let go at once.
MAX_FREE = 2
#: After this long without a request, the free supervisors are let go (the spare stays).
FREE_IDLE_SECS = 30.0
#: The next spare is forked this long after the last one was handed out, not at once. Its
#: fork and its first writes (about 2 ms of CPU) otherwise ran beside the start of the job
#: it follows (the go, the spawn), and at a cold start beside the `wait` command that
#: waits for that job: 2.3-3.2 ms more from that job's admission to its exec, measured on
#: two cores. A job that comes sooner takes a free supervisor, or is forked on request.
SPARE_DELAY_SECS = 0.05


def _spare_child(channel: socket.socket,  # pragma: no cover - forked
                 mask: set[int | signal.Signals]) -> None:
    """Wait for a job, then become its supervisor as `_child` does; never returns.

    The set-up that needs no job (a session, the descriptors) runs at once, while the job
    this spare follows is young. Measured the other way round (that set-up after the job
    arrived), its first writes to the shared pages outlasted the coordinator's sync of
    `starting`, and the whole chain took 1.5 ms longer."""
    code = 1
    try:
        _detach()
        keep = channel.fileno()
        os.dup2(0, 1)  # not the server's answer pipe, which the coordinator reads
        os.closerange(3, keep)
        os.closerange(keep + 1, 1 << 16)
        code = _serve_jobs(channel, mask, Paths.from_env())
    except BaseException as exc:
        _said(exc)
    finally:
        _leave(code)


def _serve_jobs(channel: socket.socket,  # pragma: no cover - forked
                mask: set[int | signal.Signals], paths: Paths) -> int:
    """Supervise the jobs handed over `channel`, one after another, while each leaves this
    process clean (`Leftovers`); the exit code of the last."""
    leftovers = Leftovers.now()
    served = 0
    while True:
        message, fds, _flags, _address = socket.recv_fds(channel, _SPARE_REQUEST_BYTES, 1)
        if not message or not fds:
            return 0  # let go unused
        os.dup2(fds[0], 1)
        os.dup2(fds[0], 2)
        os.close(fds[0])
        qex.supervisor.runner.say_to_new_log()
        verb, job_id, seconds, sender = message.decode().split()
        code, settled = _supervise_one(
            paths, job_id, (int(sender), float(seconds), mask, verb == "hold"))
        served += 1
        if verb == "hold" or not settled or served >= JOBS_PER_SUPERVISOR:
            return code  # a scope is its job's alone; a fault or a hand-back is the server's
        _signal.pthread_sigmask(_signal.SIG_BLOCK, {GO_SIGNAL})
        while signal.sigtimedwait([GO_SIGNAL], 0) is not None:
            pass  # a go that came late belongs to the job just served, not to the next
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(0, 1)  # the job's log is closed to this process until it serves again
        os.dup2(0, 2)
        if not leftovers.clean():
            return code
        try:
            channel.send(FREE, socket.MSG_NOSIGNAL)
        except OSError:
            return code  # the server is gone


class Leftovers:
    """What a supervisor must have as it had before a job, to serve another: the same
    descriptors, no child process, no thread but its spawners, the same cgroup and working
    directory. Anything else (a descriptor a fault left open, an orphan of the job that it
    adopted as subreaper) would follow the next job, so the supervisor exits instead."""

    def __init__(self, fds: list[str] | None, cgroup: str | None, cwd: str | None) -> None:
        self.fds = fds
        self.cgroup = cgroup
        self.cwd = cwd

    @classmethod
    def now(cls) -> Leftovers:
        return cls(_open_fds(), cgroup_of("self"), _cwd())

    def clean(self) -> bool:
        if self.fds is None or _open_fds() != self.fds:
            return False
        try:
            os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            pass  # no child at all: the one answer that is clean
        else:
            return False
        from qex.supervisor import fastspawn

        kept = fastspawn.kept_threads()
        if kept is None or _thread_count() != 1 + kept:
            return False
        cwd = _cwd()
        return cwd is not None and cwd == self.cwd and cgroup_of("self") == self.cgroup


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None


def _open_fds() -> list[str] | None:
    """This process's open descriptors (the listing's own among them, the same each time)."""
    try:
        return sorted(os.listdir("/proc/self/fd"))
    except OSError:
        return None


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1 << 16


class _Spares:
    """This server's supervisors that wait for a job: the fresh spare (or none), and those
    that served one and said `free` (newest last); and the channels of those that serve a
    job now, which say `free` when they may serve again."""

    current: Spare | None = None
    free: ClassVar[list[Spare]] = []
    busy: ClassVar[dict[int, Spare]] = {}
    #: When the next spare is to be forked (`time.monotonic()`); None when none is pending.
    spare_due: float | None = None

    @classmethod
    def want_spare(cls, now: float) -> None:
        """Fork the next spare `SPARE_DELAY_SECS` from `now`, unless one waits or is due."""
        if cls.current is None and cls.spare_due is None:
            cls.spare_due = now + SPARE_DELAY_SECS

    @classmethod
    def fork_spare_if_due(cls, now: float) -> None:
        """Fork the pending spare once its time came (a fork that fails leaves none: the
        next hand-out asks again)."""
        if cls.spare_due is None or now < cls.spare_due:
            return
        cls.spare_due = None
        if cls.current is None:
            cls.current = Spare.fork()
            chaintrace.mark("fs.spare", "-")

    @classmethod
    def wait_timeout(cls, now: float) -> float | None:
        """How long the server may wait for a request, in seconds: until the pending spare
        is due, or `FREE_IDLE_SECS` while free supervisors wait; None (no limit) otherwise."""
        limits = [FREE_IDLE_SECS] if cls.free else []
        if cls.spare_due is not None:
            limits.append(max(0.0, cls.spare_due - now))
        return min(limits) if limits else None

    @classmethod
    def take(cls, served_ok: bool) -> tuple[Spare, bool] | None:
        """The supervisor for the next job and whether it is a fresh spare; when `served_ok`,
        a free one first, the newest (its pages are the warmest). A job with a scope takes
        its supervisor for good, so it gets a fresh one."""
        if served_ok and cls.free:
            return cls.free.pop(), False
        spare, cls.current = cls.current, None
        return (spare, True) if spare is not None else None

    @classmethod
    def heard(cls, fd: int) -> None:
        """A busy supervisor's channel is readable: `free`, or its end (it exited)."""
        spare = cls.busy.pop(fd, None)
        if spare is None:
            return
        try:
            word = spare.channel.recv(16, socket.MSG_DONTWAIT)
        except BlockingIOError:
            cls.busy[fd] = spare
            return
        except OSError:
            word = b""
        if word == FREE and len(cls.free) < MAX_FREE:
            cls.free.append(spare)
            chaintrace.mark("fs.free", "-")
        else:
            spare.close()

    @classmethod
    def let_free_go(cls) -> None:
        while cls.free:
            cls.free.pop().close()

    @classmethod
    def let_all_go(cls) -> None:
        cls.let_free_go()
        if cls.current is not None:
            cls.current.close()
            cls.current = None
        for spare in cls.busy.values():
            spare.close()
        cls.busy.clear()


def _open_log(paths: Paths, job_id: str) -> int | None:
    try:
        return qex.store.jobs.open_supervisor_log(paths.job_dir(job_id))
    except OSError as exc:
        _answer(f"error qex could not open the supervisor log of {job_id}: {exc.strerror}")
        return None


def _start(paths: Paths, job_id: str, hold_seconds: float, scoped: bool) -> None:
    log_fd = _open_log(paths, job_id)
    if log_fd is None:
        return
    qex.supervisor.main.remember_config(paths)
    chaintrace.mark("fs.fork", job_id)
    verb = "hold" if scoped else "park"
    request = f"{verb} {job_id} {hold_seconds:g} {os.getppid()}"
    handed = False
    while not handed and (taken := _Spares.take(verb != "hold")) is not None:
        spare, fresh = taken
        handed = spare.hand(request, log_fd)
        if handed and verb != "hold":
            _Spares.busy[spare.channel.fileno()] = spare
        else:
            spare.close()
        if handed:
            os.close(log_fd)
            _answer(f"{spare.pid} {spare.token or ''}")
            chaintrace.mark("fs.answered" if fresh else "fs.answered.again", job_id)
    if not handed:
        _fork_child(paths, job_id, log_fd, hold_seconds, scoped)
    _Spares.want_spare(time.monotonic())  # for the next job, after this one's start


def _fork_child(paths: Paths, job_id: str, log_fd: int, hold_seconds: float,
                scoped: bool) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    # Blocked before the fork, so the child cannot miss (or die of) an early go.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {GO_SIGNAL})
    hold: Hold = (os.getppid(), hold_seconds, mask, scoped)
    try:
        pid = os.fork()
    except OSError as exc:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(log_fd)
        _answer(f"error qex could not fork a supervisor: {exc.strerror}")
        return
    if pid == 0:  # pragma: no cover - the child
        _child(paths, job_id, log_fd, hold)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    os.close(log_fd)
    _answer(f"{pid} {procs.start_token(pid) or ''}")
    chaintrace.mark("fs.answered", job_id)


def preload(paths: Paths) -> None:
    """Import, once and before any fork, what every supervisor would import for itself.

    Measured in a forked child: without this, each supervisor imported ctypes (and opened
    libc through it), the sandbox choice, the process-group sandbox, the pool code, the
    usage store and the hook module on its way to `running`: milliseconds of CPU per job,
    and private pages in every supervisor. The config parser (`tomllib`, with `datetime` and
    `string`) was the largest of them: read in every child, it cost more than the fork. Then
    rehearse a supervisor's first steps (`rehearse`), and freeze the heap, so that the
    children's garbage collector does not write to (and so copy) the pages they share with
    this process.
    """
    import gc

    from qex.supervisor.warm import load_job_modules

    load_job_modules()
    try:
        rehearse(paths)
    except Exception:  # a failed rehearsal costs the children time, never a job
        pass
    gc.collect()
    gc.freeze()


#: How often `rehearse` goes through the steps: CPython 3.11 specialises a function's
#: bytecode in place once it has run 8 times, and a child that does it copies those pages.
REHEARSALS = 10
#: The made-up job of the rehearsal; nothing on the disk is looked at under its id.
REHEARSAL_JOB = "00000000-0000-4000-8000-000000000000"


def rehearse(paths: Paths) -> None:
    """Go through a supervisor's steps from its first line to the job's spawn, on a made-up
    job held in memory, so that what those steps build once and keep is built here, before
    any fork, and shared: the bytecode the interpreter specialises, its cache of type
    attributes, the field tables of the records, ctypes' function objects, the boot id.

    Measured in a forked supervisor on a 2-core VM: building the two records from their
    JSON took 0.4 ms instead of 0.7, and the path from the first line to the exec wrote to
    about 80 fewer of the pages it shares with this process (each write a copy-on-write
    fault, several microseconds there). Nothing here writes a file, starts a thread, or
    changes a setting of this process: only lookups and reads.
    """
    import json

    from qex.core import logcap_plan
    from qex.core.config import Config
    from qex.core.records import JobSpec, JobStatus, dropped_counts
    from qex.core.states import State
    from qex.platform import jobprocess
    from qex.platform.select import open_sandbox
    from qex.supervisor import fastspawn, spawn
    from qex.supervisor.runner import Runner

    procs.boot_id()  # asked by every supervisor; the same answer until the machine reboots
    spec = JobSpec(id=REHEARSAL_JOB, name="rehearsal", cwd="/", command=["true"],
                   env=dict(os.environ), cpu=1, mem=1 << 20, submitted_at=0.0)
    status = JobStatus.new(spec, boot_id=None, oom_retries=0)
    status.state = State.STARTING
    spec_bytes = json.dumps(spec.to_dict()).encode()
    status_bytes = json.dumps(status.to_dict()).encode()
    config = Config()
    for _ in range(REHEARSALS):
        paths.job_dir(REHEARSAL_JOB)
        # Mode "off" only: an enforcing mode may move the calling process into a cgroup.
        runner = Runner(paths, JobSpec.from_dict(json.loads(spec_bytes)),
                        JobStatus.from_dict(json.loads(status_bytes)), config, notes=[],
                        sandbox=open_sandbox(REHEARSAL_JOB, "off"))
        procs.start_token(os.getpid())
        runner._error()
        runner.sandbox.begin_attempt(runner._limits())
        runner.sandbox.describe()
        child = runner._child()
        spawn._check(child)
        spawn._fast_path_fits(child)
        fastspawn._candidates(child.argv[0], child.env)
        logcap_plan.parts(config.logs.max_bytes or 1 << 20)
        dropped_counts(runner.status.logs_dropped, "stdout")
        jobprocess.children_usage()


def _hold_seconds(word: str) -> float | None:
    try:
        value = float(word)
    except ValueError:
        return None
    return min(value, MAX_HOLD_SECONDS) if value > 0 else None


def _requests_ready() -> bool:
    """Wait until the coordinator wrote (True), taking in what the busy supervisors say
    meanwhile (False after each). The wait ends early to fork a pending spare
    (`SPARE_DELAY_SECS`), and with free supervisors after `FREE_IDLE_SECS`, which lets them
    go; with neither it has no timeout."""
    timeout = _Spares.wait_timeout(time.monotonic())
    poller = select.poll()  # no limit on descriptor numbers, unlike select()
    for fd in (0, *_Spares.busy):
        poller.register(fd, select.POLLIN)
    try:
        readable = [fd for fd, _event in poller.poll(None if timeout is None else timeout * 1000)]
    except InterruptedError:
        return False
    if not readable:
        if _Spares.spare_due is None:
            _Spares.let_free_go()  # their idle time is over
        else:
            _Spares.fork_spare_if_due(time.monotonic())  # the wait was the spare's, shorter
        return False
    for fd in readable:
        if fd != 0:
            _Spares.heard(fd)
    return 0 in readable


def serve() -> int:
    """Answer `start`, `hold` and `park` requests until stdin closes, then outlive the last
    supervisor."""
    try:
        paths = Paths.from_env()
    except PathError as exc:
        _answer(f"error {exc}")
        return 1
    preload(paths)
    chaintrace.mark("fs.ready", "-")
    signal.signal(signal.SIGCHLD, _reap)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is not for us
    _Spares.current = Spare.fork()
    buffer = b""
    while True:
        if not _requests_ready():
            continue
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
            verb, seconds = (words[0], _hold_seconds(words[2])) if len(words) == 3 else ("", None)
            if verb in ("hold", "park") and is_uuid(words[1]) and seconds is not None:
                _start(paths, words[1].lower(), seconds, scoped=verb == "hold")
            elif words:
                _answer(f"error the fork server does not know the request `{line[:80]!r}`")
    # The coordinator is gone. Let the spare and the free supervisors go (a busy one exits
    # after its job), and keep reaping our supervisors until the last one exits.
    _Spares.let_all_go()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
