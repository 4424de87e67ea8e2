"""The coordinator's side of the supervisor fork server (`qex.supervisor.forkserver`).

Forked from the coordinator as soon as the config is read (`start_forked`): the two then
share the interpreter's start and the config modules, the server imports the supervisor's
modules while the coordinator imports its event loop, and the first job finds the server
ready. It is kept when the config will use it (`wanted`: every job without a scope, and the
held supervisors of the pystemd backend), stopped at once otherwise; a server that is not
running later (it died, or was never wanted) is started as a new program
(`python -m qex.supervisor --forkserver`) on the first job that needs one, because by then
the coordinator may have threads, and a fork is only safe from a process without them. It
is kept for the coordinator's life. A request is a line and its answer a line, on the event
loop's thread: the answer comes back in about a millisecond (one fork of a small process). A
job without a scope asks with `park` before its `starting` record is written and reads the
answer after (`release_parked`), so the fork overlaps the sync of that record. Any fault
turns the server off for this coordinator and the caller falls back to a fresh supervisor
process, so a broken fork server can slow qex down but never stop a job from starting.

Supervisors forked by the server are not the coordinator's children: the coordinator
watches them with a pidfd (`reaper.watch_foreign`), and the server reaps them.
"""

from __future__ import annotations

import os
import select
import sys
import time
from collections.abc import Mapping

from qex.coordinator.log import log
from qex.core.pyexec import module_argv
from qex.platform import chaintrace, host
from qex.platform.detach import Spawned, fork_detached

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from typing import NoReturn

    from qex.core.config import Config
    from qex.platform.held import Launched, NameSupervisor

#: How long one answer may take before the server is declared broken.
ANSWER_TIMEOUT = 5.0


def wanted(config: Config, env: Mapping[str, str] | None = None) -> bool:
    """True when this config starts supervisors through the fork server.

    Without a scope (`[enforce] mode = "off"`, or `use_systemd = false`) every job does. With
    one, only the pystemd backend can take a forked supervisor (held until it sits in its
    scope, `qex.platform.launch.forks_held`): systemd-run makes the scope around a process of
    its own, and a machine that cannot make a scope starts a fresh supervisor with the
    reason in its record.
    """
    if config.enforce.mode == "off" or not config.enforce.use_systemd:
        return True
    from qex.platform.detect import detect
    from qex.platform.launch import forks_held

    return forks_held(detect(), os.environ if env is None else env)


class Forked(Spawned):
    """A fork server forked from this process: what `ForkServer` uses of a `Popen` (the pid,
    the two pipes as files, `poll`, `kill`, `wait`)."""

    def __init__(self, pid: int, requests: int, answers: int) -> None:
        super().__init__(pid)
        self.stdin = open(requests, "wb", buffering=0)  # noqa: SIM115 (closed by its owner)
        self.stdout = open(answers, "rb", buffering=0)  # noqa: SIM115

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait for the exit (`timeout` is only there to match `Popen.wait`: the callers wait
        after a kill)."""
        return self._wait(0)

    def kill(self) -> None:
        if self.returncode is None:
            import signal

            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class ForkServer:
    def __init__(self, log_path: str | os.PathLike[str]) -> None:
        self._log_path = log_path
        self._proc: subprocess.Popen[bytes] | Forked | None = None
        # The coordinator watches forked supervisors with a pidfd, so the portable
        # implementation (no pidfd) starts every supervisor fresh instead.
        self._broken = not (host.linux() and hasattr(os, "pidfd_open"))
        self._buffer = b""
        #: The request of `park` whose answer is still unread: (job id, when, seconds).
        self._parked: tuple[str, float, float] | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _ensure(self) -> subprocess.Popen[bytes] | Forked | None:
        if self._broken:
            return None
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        import subprocess

        with open(self._log_path, "ab") as log_file:
            self._proc = subprocess.Popen(
                module_argv("qex.supervisor", "--forkserver"),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log_file,
                cwd="/", start_new_session=True,
            )
        self._buffer = b""
        self._parked = None
        chaintrace.mark("co.forkserver", "-")
        return self._proc

    def start_forked(self) -> None:
        """Fork the server from this process, before it knows whether its config uses one.

        Only while the coordinator is still one thread with nothing but its config read: the
        child then holds no lock, socket or event loop of ours, and skips the interpreter's
        start that a new program would pay. A failure here is not final (under systemd the
        log's directory may not exist yet): `warm` starts a new program once the coordinator
        knows that it wants the server; `stop_unused` stops it otherwise.
        """
        if self._broken or self._proc is not None:
            return
        try:
            log_fd = os.open(self._log_path,
                             os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        except OSError:
            return
        try:
            requests_read, requests_write = os.pipe()
            answers_read, answers_write = os.pipe()
        except OSError:
            os.close(log_fd)
            return
        try:
            pid = fork_detached(log_fd, stdin=requests_read, stdout=answers_write)
        except OSError:
            pid = -1
        if pid == 0:  # pragma: no cover - the child, which never returns
            _become_server()
        for fd in (requests_read, answers_write, log_fd):
            os.close(fd)
        if pid < 0:
            os.close(requests_write)
            os.close(answers_read)
            return
        self._proc = Forked(pid, requests_write, answers_read)
        self._buffer = b""
        self._parked = None
        chaintrace.mark("co.forkserver", "-")

    def warm(self) -> None:
        """Start the server now, so that the first job finds its imports done (a cold start
        otherwise waited for the whole start-up of the server inside the first launch)."""
        try:
            self._ensure()
        except OSError as exc:
            self._give_up(f"it could not start ({exc.strerror})")

    def stop_unused(self) -> None:
        """Stop a server that was started early and never asked for a supervisor (the config
        does not use it, or the coordinator stops before it serves). A later job that needs
        one starts it again."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.kill()
            proc.wait()
        except OSError:
            pass
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass

    def _give_up(self, why: str) -> None:
        log(f"the supervisor fork server is off for this coordinator: {why}")
        self._broken = True
        self._parked = None
        if self._proc is not None:
            try:
                if self._proc.stdin is not None:
                    self._proc.stdin.close()
            except OSError:
                pass
            self._proc = None

    def _read_line(self, fd: int) -> bytes | None:
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([fd], [], [], ANSWER_TIMEOUT)
            if not ready:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def launch(self, job_id: str, seconds: float,
               before_go: NameSupervisor | None = None) -> Launched | None:
        """A supervisor for `job_id` forked by the server, named (`before_go`) and then let go;
        None to use a fresh process. The start of a job whose park could not be sent or
        released: it waits for the server's answer, where a park overlapped it with the
        `starting` record's sync. The child waits for its go like a parked one, so that it
        is named on the disk before it can touch the job."""
        self.discard_parked()  # a park's answer comes first: never take it for this request
        if not self._send(f"park {job_id} {seconds:g}"):
            return None
        self._parked = (job_id, time.monotonic(), seconds)
        return self.release_parked(job_id, before_go)

    def park(self, job_id: str, seconds: float) -> bool:
        """Ask for a supervisor of `job_id` that waits for its go, and return at once.

        Sent before the coordinator writes the job's `starting` record: the server forks
        while the coordinator waits for the disk, and `release_parked` (or `discard_parked`
        when the write failed) reads the answer afterwards. False when the request could not
        be sent (no server, or a broken one); the caller then starts the supervisor as before.
        """
        if self._broken or self._parked is not None:
            return False
        if self._proc is None or self._proc.poll() is not None:
            self.warm()
            return False
        if not self._send(f"park {job_id} {seconds:g}"):
            return False
        self._parked = (job_id, time.monotonic(), seconds)
        return True

    def release_parked(self, job_id: str,
                       before_go: NameSupervisor | None = None) -> Launched | None:
        """Send the go to the supervisor parked for `job_id` (its `starting` record is now
        written). None when there is none to release: the caller starts one another way.

        `before_go(pid, token)` runs once the child is known and just before its go: the
        coordinator names the supervisor on the disk there, so that no moment exists in
        which the child works on the job while the disk names no supervisor (see
        `qex.coordinator.scheduling._write_supervisor_pid`)."""
        parked = self._parked
        if parked is None:
            return None
        if parked[0] != job_id:
            self.discard_parked()  # its answer must not be taken for another request's
            return None
        self._parked = None
        answer = self._receive(job_id)
        if answer is None:
            return None
        from qex.platform.held import Launched, PidfdHeld

        pid, token = answer
        try:
            child = PidfdHeld(pid, token)
        except OSError:
            return None  # gone or reused; without a handle there is no go (it times out)
        if time.monotonic() - parked[1] > parked[2] / 2:
            # Past half of its wait the child could give up while the go is on its way.
            log(f"the record that starts the job {job_id} took longer than half of the "
                f"{parked[2]:g}s a parked supervisor waits; a fresh one is started instead")
            child.discard()
            return None
        if before_go is not None:
            before_go(pid, token)
        try:
            child.release()
        except OSError:
            child.discard()
            return None
        child.close()
        return Launched(pid=pid, start_token=token, backend="process-group", forked=True)

    def discard_parked(self) -> None:
        """Read the answer to the outstanding `park` and kill the child it names (never
        released, so it never touched the job); nothing when no park is outstanding. For a
        `starting` record that could not be written, and before any other request, whose
        answer must not be mistaken for the park's."""
        parked, self._parked = self._parked, None
        if parked is None:
            return
        answer = self._receive(parked[0])
        if answer is None:
            return
        from qex.platform.held import PidfdHeld

        try:
            PidfdHeld(*answer).discard()
        except OSError:
            pass  # gone already; without a go it would have exited untouched anyway

    def hold(self, job_id: str, seconds: float) -> tuple[int, str | None] | None:
        """(pid, start token) of a forked supervisor for `job_id` that waits up to `seconds`
        for its go signal (`qex.platform.launch` sends it once the child sits in its scope);
        None to start a fresh supervisor instead.

        A server that is not running yet is started here but not waited for: this job takes
        the fresh path, and the next finds the server's imports done (waiting here would put
        the whole start-up of the server into this job's launch). The server the coordinator
        forked at its start is running: the first job asks it, as `launch` does, and waits
        at most for the rest of its imports."""
        if self._broken:
            return None
        if self._proc is None or self._proc.poll() is not None:
            self.warm()
            return None
        return self._ask(f"hold {job_id} {seconds:g}", job_id)

    def _ask(self, request: str, job_id: str) -> tuple[int, str | None] | None:
        self.discard_parked()  # a park's answer comes first: never take it for this request
        if not self._send(request):
            return None
        return self._receive(job_id)

    def _send(self, request: str) -> bool:
        try:
            proc = self._ensure()
        except OSError as exc:
            self._give_up(f"it could not start ({exc.strerror})")
            return False
        if proc is None or proc.stdin is None or proc.stdout is None:
            return False
        try:
            proc.stdin.write(f"{request}\n".encode())
            proc.stdin.flush()
        except OSError as exc:
            self._give_up(f"it stopped answering ({exc.strerror})")
            return False
        return True

    def _receive(self, job_id: str) -> tuple[int, str | None] | None:
        """The answer to the request just sent: (pid, start token), or None after saying why."""
        proc = self._proc
        if proc is None or proc.stdout is None:
            return None
        try:
            line = self._read_line(proc.stdout.fileno())
        except OSError as exc:
            self._give_up(f"it stopped answering ({exc.strerror})")
            return None
        if line is None:
            self._give_up("it gave no answer")
            return None
        words = line.decode("utf-8", "replace").split(" ", 1)
        if words[0] == "error" or not words[0].isdigit():
            said = line.decode(errors="replace")
            log(f"the supervisor fork server refused the job {job_id}: {said}")
            return None
        token = words[1].strip() if len(words) > 1 and words[1].strip() else None
        return int(words[0]), token

    def close(self) -> None:
        """Close the request pipe: the server exits once its last supervisor has."""
        if self._proc is not None and self._proc.stdin is not None:
            try:
                self._proc.stdin.close()
            except OSError:
                pass


def _become_server() -> NoReturn:  # pragma: no cover - the forked child
    """The forked child, detached with the request pipe as stdin, the answer pipe as stdout
    and the log as stderr: the fork server's process as `python -m qex.supervisor
    --forkserver` would start it (no LISTEN_* variable: those sockets are the coordinator's),
    then `serve` until the coordinator goes away."""
    code = 1
    try:
        from qex.platform.activation import LISTEN_VARS

        for name in LISTEN_VARS:
            os.environ.pop(name, None)
        from qex.platform.proctitle import set_title

        set_title("qex supervisor --forkserver", "qex-forkserver")
        sys.argv = [sys.argv[0], "--forkserver"]
        from qex.supervisor.__main__ import entry

        code = entry(["--forkserver"])
    except BaseException as exc:
        try:
            os.write(2, f"qex fork server: {exc!r}\n".encode("utf-8", "replace"))
        except OSError:
            pass
    finally:
        os._exit(code)
