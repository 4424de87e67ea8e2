"""Start a supervisor for one job, detached from the coordinator's session.

The coordinator stays the parent (it reaps on SIGCHLD, so no zombie lingers on machines whose
PID 1 does not reap), but the supervisor leads its own session, so neither a terminal hang-up
nor the coordinator's death reaches it.

When a scope is wanted and `detect()` says one can be made, the supervisor starts inside a
transient user scope `qex-<id8>-<n>.scope` (see `qex.platform.scope`):

* pystemd: spawn the supervisor with `QEX_SUPERVISOR_GO_FD` (a pipe it waits on before it
  touches the job), ask the user manager for a scope holding its pid, check that
  /proc/<pid>/cgroup really points into the scope, then write the go byte. On any failure
  the waiting supervisor is killed and a plain one is started instead, with the reason in
  `Launched.note` (and in `QEX_SCOPE_NOTE` for the supervisor's own record).
* pystemd with a fork server (the caller passes `fork`): the same handshake, but the
  supervisor is a child forked by the ready fork server (no imports to pay) that waits for
  `GO_SIGNAL` from the coordinator before it reads or touches the job. The coordinator holds
  a pidfd of it, asks for the scope, checks /proc, and only then sends the signal through the
  pidfd; on any failure it kills the child through the same pidfd and falls back to the
  plain start below, with the note. A child whose go never comes exits by itself after
  `HOLD_SECONDS`, without touching the job.
* systemd-run: spawn `systemd-run --user --scope ... -- <supervisor>`; systemd-run execs
  the supervisor in place once the scope exists, so the pid we get is the supervisor's and
  it is in the scope from its first instruction.
* a standby, for either backend wherever systemd-run is installed (the caller passes
  `standby_log`; the coordinator also calls `start_standby` when it starts): after each
  scoped start the launcher starts the next supervisor ahead of need, `systemd-run ... --
  python -m qex.supervisor --standby` in a scope of its own (`qex-standby_<hex>-1.scope`),
  where it imports its modules and waits. The next job takes it once /proc shows it in that
  scope: the caller names it, then the job's id goes down its pipe as the go
  (`qex.supervisor.standby`). A standby that has not reached its scope yet is kept for a
  later job and the job starts as above; one that is gone is let go (after
  `STANDBY_MISSES` such in a row no more are started); a launch that wants no scope lets it
  go too (end-of-file on its pipe: it exits untouched). With pystemd this also spares the
  coordinator its D-Bus call, during which it answers nobody.

Every fresh supervisor waits for a go byte on its pipe (`GO_FD`), also the plain one and the
one behind systemd-run (which execs it with our descriptors): the caller's `announce` names
it on the disk first, and only then is the byte written. A coordinator killed before the go
closes the pipe, and the supervisor that reads end-of-file leaves the job untouched for the
next coordinator to queue again (`qex.supervisor.main`). Without the pipe, a coordinator
killed between the start and the name left a `starting` record that named nobody while a
supervisor ran the job, and recovery queued it a second time. Where the supervisor starts
at once the byte follows its pid by microseconds and is waiting in the pipe long before the
new interpreter has imported enough to read it.

`QEX_SCOPE_BACKEND=pystemd|systemd-run` forces a backend (the VM tests run both),
`QEX_SCOPE_FORK=0` makes the pystemd backend start every supervisor fresh, and
`QEX_SCOPE_STANDBY=0` starts no standby (tests/vm/measure.py compares each pair;
they are also a way out should a system mishandle held or standby supervisors).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from qex.core.model import dataclass, field
from qex.core.pyexec import module_argv
from qex.platform import chaintrace, procs
from qex.platform.cgroup import cgroup_of
from qex.platform.cgroup_sandbox import SUPERVISOR_LEAF
from qex.platform.detach import PASSED_FD, spawn_detached
from qex.platform.detect import Capabilities, detect
from qex.platform.held import (
    HOLD_SECONDS,
    ForkHeld,
    HeldSupervisor,
    Launched,
    NameSupervisor,
    PidfdHeld,
)
from qex.platform.scope import (
    PystemdScopeManager,
    ScopeError,
    ScopeManager,
    ScopeRequest,
    in_unit,
    standby_unit_name,
    systemd_run_argv,
    unit_name,
)

#: The fd number at which a supervisor finds its go pipe (named in QEX_SUPERVISOR_GO_FD).
GO_FD = PASSED_FD
#: How long the coordinator waits for the user manager to finish a scope's start job.
SCOPE_TIMEOUT = 10.0
#: `QEX_SCOPE_STANDBY=0`: no supervisor is started ahead of need in a scope of its own.
STANDBY_VAR = "QEX_SCOPE_STANDBY"
#: After so many standbys in a row died before a job took one (a systemd-run that cannot
#: make scopes here while pystemd can, say), the launcher starts no more: each had cost a
#: process for nothing.
STANDBY_MISSES = 3
#: Variables the user manager's clients need; copied from our environment when `env` lacks them.
_MANAGER_ENV = ("XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS")


def forks_held(caps: Capabilities, env: Mapping[str, str]) -> bool:
    """True when a job that wants a scope gets a held supervisor from the fork server: only
    the pystemd backend can move a process that already runs into a new scope (systemd-run
    makes the scope around a process of its own), and `QEX_SCOPE_FORK=0` asks for fresh
    supervisors. The coordinator asks this at its start, to know whether it keeps the server
    it started early (`qex.coordinator.forking.wanted`)."""
    return (caps.enforcement_possible and caps.scope_backend == "pystemd"
            and env.get("QEX_SCOPE_FORK") != "0")


def standby_possible(caps: Capabilities) -> bool:
    """True when a supervisor can wait ahead of need in a scope of its own: it is started
    through systemd-run, which the systemd-run backend has by definition and the pystemd
    backend uses where it is installed too. A supervisor that waits there costs the
    coordinator nothing when its job comes; the pystemd handshake asks the user manager for
    the scope over D-Bus at that moment, a call that holds the coordinator's interpreter
    (pystemd does not release it) while the manager makes the scope and moves the process."""
    if not caps.enforcement_possible:
        return False
    return caps.scope_backend == "systemd-run" or (caps.scope_backend == "pystemd"
                                                   and caps.systemd_run)


def supervisor_argv(job_id: str, *extra: str) -> list[str]:
    return module_argv("qex.supervisor", job_id, *extra)


def standby_argv() -> list[str]:
    return module_argv("qex.supervisor", "--standby")


@dataclass
class Standby:
    """A supervisor started through systemd-run before its job was known, waiting in the
    scope `unit` for the job's id on the pipe whose write end is `go`."""

    pid: int
    token: str | None
    unit: str
    go: int


def spawn_logged(
    argv: list[str], log_path: Path, env: Mapping[str, str], *, go_fd: int | None = None
) -> int:
    """`qex.platform.detach.spawn_detached` with the output appended to `log_path` (made 0600).

    `go_fd`, when given, is handed to the child as fd `GO_FD`.
    """
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        return spawn_detached(argv, fd, env, pass_fd=go_fd)
    finally:
        os.close(fd)


def _next_sequence(job_dir: Path) -> int:
    """1, 2, 3 ... per job across coordinator restarts, so each scope name is new."""
    path = job_dir / "scope.seq"
    try:
        current = int(path.read_text().strip() or "0")
    except (OSError, ValueError):
        current = 0
    value = current + 1
    tmp = job_dir / f".scope.seq.{os.getpid()}"
    try:
        tmp.write_text(f"{value}\n")
        os.replace(tmp, path)
    except OSError:
        pass
    return value


def _with_manager_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with the variables a client of the user manager needs, from ours if it lacks them."""
    scope_env = dict(env)
    for name in _MANAGER_ENV:
        if name not in scope_env and name in os.environ:
            scope_env[name] = os.environ[name]
    return scope_env


def _kill_and_reap(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        return
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass  # the coordinator's own reaper was faster


def _default_manager() -> ScopeManager:
    return PystemdScopeManager()


@dataclass
class ScopeLauncher:
    """The launch logic with every outside effect injectable (tests use fakes)."""

    capabilities: Callable[[], Capabilities] = detect
    manager_factory: Callable[[], ScopeManager] = _default_manager
    spawn: Callable[..., int] = spawn_logged
    cgroup_of: Callable[[int], str | None] = cgroup_of
    kill: Callable[[int], None] = _kill_and_reap
    alive: Callable[[int, str | None], bool] = procs.same_process
    open_held: Callable[[int, str | None], HeldSupervisor] = PidfdHeld
    clock: Callable[[], float] = time.monotonic
    systemd_run: str = "systemd-run"
    timeout: float = SCOPE_TIMEOUT
    hold_seconds: float = HOLD_SECONDS
    _manager: ScopeManager | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _standby: Standby | None = None
    #: Standbys in a row that were gone before a job could take one (`STANDBY_MISSES`).
    _standby_misses: int = 0

    def manager(self) -> ScopeManager:
        with self._lock:
            if self._manager is None:
                self._manager = self.manager_factory()
            return self._manager

    def launch(
        self, job_id: str, job_dir: Path, *, want_scope: bool, env: Mapping[str, str],
        fork: ForkHeld | None = None, announce: NameSupervisor | None = None,
        standby_log: Path | None = None,
    ) -> Launched:
        """`announce(pid, token)`, when given, runs just before the go of the supervisor (each
        one waits for it), so the caller can name it on the disk while it has not touched the
        job yet. `standby_log`, when given, lets a scoped start be followed by the next
        supervisor started ahead of need (`standby_possible`), with its output there until
        it has a job."""
        argv = supervisor_argv(job_id)
        log = job_dir / "supervisor.log"
        if not want_scope:
            self.discard_standby()
            return self._plain(argv, log, env, note=None, announce=announce)
        caps = self.capabilities()
        backend = caps.scope_backend
        if not caps.enforcement_possible or backend is None:
            self.discard_standby()
            reason = caps.reason or "this machine cannot make a scope"
            return self._plain(argv, log, env, note=reason, announce=announce)
        request = ScopeRequest(
            unit=unit_name(job_id, _next_sequence(job_dir)),
            description=f"qex job {job_id}",
        )
        scope_env = _with_manager_env(env)
        launched = self._scoped(caps, job_id, request, argv, log, env=env,
                                scope_env=scope_env, fork=fork, announce=announce)
        wants = launched.unit is not None and self._wants_standby(caps, env)
        if standby_log is not None and wants:
            self._prepare_standby(scope_env, standby_log)
        return launched

    def _scoped(self, caps: Capabilities, job_id: str, request: ScopeRequest, argv: list[str],
                log: Path, *, env: Mapping[str, str], scope_env: Mapping[str, str],
                fork: ForkHeld | None, announce: NameSupervisor | None) -> Launched:
        """The supervisor in a scope: a standby that waits in one already, else one started
        by the backend (pystemd: held or fresh; systemd-run: fresh)."""
        hold = fork if fork is not None and forks_held(caps, os.environ) else None
        standby = self._take_standby(settled=hold is not None)
        if standby is not None:
            launched = self._release_standby(standby, job_id, announce)
            if launched is not None:
                return launched
        if caps.scope_backend == "systemd-run":
            return self._systemd_run(request, argv, log, scope_env, announce=announce)
        if hold is not None:
            held = self._hold(hold, job_id)
            if held is not None:
                return self._pystemd_held(request, held, argv, log, env, announce=announce)
        return self._pystemd(request, argv, log, scope_env, env, announce=announce)

    def _hold(self, fork: ForkHeld, job_id: str) -> tuple[HeldSupervisor, str | None] | None:
        """A held supervisor from the fork server, or None to start a fresh one instead.

        When no handle can be opened on the child it is left waiting: without a go it exits
        by itself after `hold_seconds`, and it never touches the job."""
        try:
            answer = fork(job_id, self.hold_seconds)
        except Exception:
            return None
        if answer is None:
            return None
        pid, token = answer
        try:
            return self.open_held(pid, token), token
        except Exception:  # gone, reused, or no pidfd here: never a go without a handle
            return None

    def _place(self, request: ScopeRequest, pid: int, job_id: str) -> str | None:
        """Ask for the scope around `pid` and check /proc: None when it sits there, else why
        not."""
        try:
            self.manager().start(request, pid, self.timeout)
            chaintrace.mark("co.scope.started", job_id)
            where = self.cgroup_of(pid)
            if not in_unit(where, request.unit):
                return (f"systemd reported the scope {request.unit} started, but the "
                        f"supervisor's cgroup is {where or 'unknown'}")
        except ScopeError as exc:
            return str(exc)
        except Exception as exc:  # a broken binding must not cost the job
            return f"the pystemd call failed: {exc!r}"
        return None

    def _pystemd_held(self, request: ScopeRequest, held: tuple[HeldSupervisor, str | None],
                      argv: list[str], log: Path, plain_env: Mapping[str, str], *,
                      announce: NameSupervisor | None = None) -> Launched:
        """The handshake with a forked supervisor: scope, check, then the go signal."""
        child, token = held
        job_id = argv[-1]
        chaintrace.mark("co.scope.held", job_id)
        asked = self.clock()
        failure = self._place(request, child.pid, job_id)
        chaintrace.mark("co.scope.verified", job_id)
        if failure is None and self.clock() - asked > self.hold_seconds / 2:
            # Past half its wait the child could give up while the go is on its way.
            failure = (f"the user manager took {self.clock() - asked:.1f}s to make the scope "
                       f"{request.unit}, too long for a held supervisor")
        if failure is None:
            if announce is not None:
                announce(child.pid, token)
            try:
                child.release()
            except OSError as exc:
                failure = (f"the forked supervisor did not wait for its scope "
                           f"({exc.strerror or exc})")
        if failure is not None:
            child.discard()
            return self._plain(argv, log, plain_env, note=failure, announce=announce)
        child.close()
        chaintrace.mark("co.scope.go", job_id)
        return Launched(pid=child.pid, start_token=token, backend="pystemd", unit=request.unit,
                        forked=True)

    def _plain(self, argv: list[str], log: Path, env: Mapping[str, str], note: str | None, *,
               announce: NameSupervisor | None = None) -> Launched:
        child_env = dict(env)
        if note:
            child_env["QEX_SCOPE_NOTE"] = note
        pid, token = self._started_then_named(argv, log, child_env, announce)
        return Launched(pid=pid, start_token=token, backend="process-group", note=note)

    def _systemd_run(self, request: ScopeRequest, argv: list[str], log: Path,
                     env: Mapping[str, str], *,
                     announce: NameSupervisor | None = None) -> Launched:
        child_env = dict(env)
        child_env.pop("QEX_SCOPE_NOTE", None)
        line = systemd_run_argv(request, argv, self.systemd_run)
        try:
            pid, token = self._started_then_named(line, log, child_env, announce)
        except OSError as exc:
            note = f"systemd-run could not start ({exc})"
            return self._plain(argv, log, env, note=note, announce=announce)
        return Launched(pid=pid, start_token=token, backend="systemd-run", unit=request.unit)

    def start_standby(self, env: Mapping[str, str], log: Path) -> bool:
        """At the coordinator's start: a standby for the first scoped job too, where one can
        be started (`standby_possible`). True when one was started."""
        if not self._wants_standby(self.capabilities(), env):
            return False
        self._prepare_standby(_with_manager_env(env), log)
        return self._standby is not None

    def _wants_standby(self, caps: Capabilities, env: Mapping[str, str]) -> bool:
        """True when a standby should wait for the next scoped job: one can be started here,
        `QEX_SCOPE_STANDBY=0` does not forbid it, and the last ones did not keep dying."""
        return (env.get(STANDBY_VAR) != "0" and standby_possible(caps)
                and self._standby_misses < STANDBY_MISSES)

    def _take_standby(self, *, settled: bool = False) -> Standby | None:
        """The standby when /proc shows it in its scope; None to start the job's supervisor
        otherwise. One that has not reached its scope yet stays for a later job; one that is
        gone (its systemd-run failed, or it was killed) is let go.

        `settled` (where the alternative is pystemd's held supervisor): only once it sits in
        the scope's `supervisor/` leaf, which it enters when its imports are done.
        systemd-run puts it in the scope before its interpreter starts, and for hundreds of
        milliseconds after: better than a fresh start, but slower than a held supervisor
        (measured in the guest of tests/vm, jobs sent back to back: 397 ms from admission to
        exec against 149 ms)."""
        standby = self._standby
        if standby is None:
            return None
        if not self.alive(standby.pid, standby.token):
            self._standby_misses += 1
            self.discard_standby()
            return None
        where = self.cgroup_of(standby.pid)
        if not in_unit(where, standby.unit):
            return None
        if settled and not (where or "").endswith(f"/{standby.unit}/{SUPERVISOR_LEAF}"):
            return None
        self._standby = None
        self._standby_misses = 0
        return standby

    def _release_standby(self, standby: Standby, job_id: str,
                         announce: NameSupervisor | None) -> Launched | None:
        """Name the standby, then send it the job's id: its go. None when it is gone by then
        (the caller starts a fresh supervisor, whose name replaces this one)."""
        chaintrace.mark("co.standby", job_id)
        try:
            if announce is not None:
                announce(standby.pid, standby.token)
            os.write(standby.go, f"{job_id}\n".encode())
        except OSError:
            return None
        finally:
            os.close(standby.go)
        chaintrace.mark("co.standby.go", job_id)
        return Launched(pid=standby.pid, start_token=standby.token, backend="systemd-run",
                        unit=standby.unit)

    def _prepare_standby(self, env: Mapping[str, str], log: Path) -> None:
        """Start the next systemd-run supervisor now, in a scope of its own, unless one waits
        already. A failure to start it costs nothing: the next job starts fresh."""
        if self._standby is not None:
            return
        request = ScopeRequest(unit=standby_unit_name(),
                               description="qex supervisor, waiting for its job")
        child_env = dict(env)
        child_env.pop("QEX_SCOPE_NOTE", None)
        child_env["QEX_SUPERVISOR_GO_FD"] = str(GO_FD)
        read_end, write_end = os.pipe()
        try:
            pid = self.spawn(systemd_run_argv(request, standby_argv(), self.systemd_run), log,
                             child_env, go_fd=read_end)
        except OSError:
            os.close(write_end)
            return
        finally:
            os.close(read_end)
        self._standby = Standby(pid=pid, token=procs.start_token(pid), unit=request.unit,
                                go=write_end)

    def discard_standby(self) -> None:
        """Let the standby go: at end-of-file on its pipe it exits, having touched nothing."""
        standby, self._standby = self._standby, None
        if standby is not None:
            try:
                os.close(standby.go)
            except OSError:
                pass

    def _started_then_named(self, argv: list[str], log: Path, env: dict[str, str],
                            announce: NameSupervisor | None) -> tuple[int, str | None]:
        """Spawn a supervisor that waits for its go (`env`, the child's own copy, gets the
        pipe's variable), name it (`announce`), then send the go; (pid, start token). The go
        is sent even when the name could not be written: the caller has logged that, and the
        job must not wait for a disk that refused a file."""
        read_end, write_end = os.pipe()
        env["QEX_SUPERVISOR_GO_FD"] = str(GO_FD)
        try:
            try:
                pid = self.spawn(argv, log, env, go_fd=read_end)
            finally:
                os.close(read_end)
            token = procs.start_token(pid)
            if announce is not None:
                announce(pid, token)
            try:
                os.write(write_end, b"1")
            except OSError:
                pass  # it is gone already: its exit is reaped and judged like any other
        finally:
            os.close(write_end)
        return pid, token

    def _pystemd(self, request: ScopeRequest, argv: list[str], log: Path,
                 env: Mapping[str, str], plain_env: Mapping[str, str], *,
                 announce: NameSupervisor | None = None) -> Launched:
        read_end, write_end = os.pipe()
        child_env = dict(env)
        child_env["QEX_SUPERVISOR_GO_FD"] = str(GO_FD)
        child_env.pop("QEX_SCOPE_NOTE", None)
        job_id = argv[-1]
        try:
            pid = self.spawn(argv, log, child_env, go_fd=read_end)
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        chaintrace.mark("co.scope.spawned", job_id)
        failure = self._place(request, pid, job_id)
        chaintrace.mark("co.scope.verified", job_id)
        token = procs.start_token(pid)
        if failure is None:
            if announce is not None:
                announce(pid, token)
            try:
                os.write(write_end, b"1")
            except OSError as exc:
                failure = f"the supervisor did not wait for its scope ({exc.strerror})"
        if failure is not None:
            # Kill before closing our end: at end-of-file the supervisor would record the job
            # as failed, and the plain supervisor below must find it still `starting`.
            self.kill(pid)
            os.close(write_end)
            return self._plain(argv, log, plain_env, note=failure, announce=announce)
        os.close(write_end)
        chaintrace.mark("co.scope.go", job_id)
        return Launched(pid=pid, start_token=token, backend="pystemd", unit=request.unit)


_launcher = ScopeLauncher()


def launch_supervisor(
    job_id: str, job_dir: Path, *, want_scope: bool, env: Mapping[str, str],
    fork: ForkHeld | None = None, announce: NameSupervisor | None = None,
    standby_log: Path | None = None,
) -> Launched:
    """Start `python -m qex.supervisor <id>`; inside a scope when `want_scope` and possible.

    `want_scope` is the coordinator's `[enforce] mode != "off" and use_systemd`. A failure
    to make the scope never fails the job: it runs as a plain process group and
    `Launched.note` says why. `fork`, when given, asks the fork server for a held
    supervisor, which the pystemd backend uses in place of a fresh process (`forked` in the
    answer then says so). `announce` is called before the go (`ScopeLauncher.launch`).
    `standby_log` lets the systemd-run backend start the next supervisor ahead of need.
    """
    return _launcher.launch(job_id, job_dir, want_scope=want_scope, env=env, fork=fork,
                            announce=announce, standby_log=standby_log)


def discard_standby() -> None:
    """Let the standby supervisor go, if one waits (`ScopeLauncher.discard_standby`)."""
    _launcher.discard_standby()


def start_standby(env: Mapping[str, str], log: Path) -> bool:
    """Start a standby supervisor now if scopes come from systemd-run here
    (`ScopeLauncher.start_standby`): the coordinator calls it at its start when its config
    asks for scopes, so that its first scoped job does not start fresh either."""
    return _launcher.start_standby(env, log)
