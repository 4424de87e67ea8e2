"""`qex daemon`: start, recover, serve, and stop the coordinator of one state dir.

Start sequence (each step can end the process, with the reason in the log):
0. the descriptor limit, before anything that inherits it (`qex.coordinator.early`);
1. read the config (a bad file: exit 1, the message in the log), then fork the supervisor
   fork server (`ForkServer.start_forked`): the two processes share what is imported so far,
   and the server's imports and ours take their time side by side;
2. the run and jobs dirs, 0700;
3. the pid lock (held by another process: exit 0 quietly; a CLI may have raced us);
4. the socket: systemd's, or our own bound under umask 0177 (a command may connect and send
   its request from here on: it waits in the socket's backlog while we import the rest),
   and the command that started this process is told so on its ready pipe;
5. keep the fork server if the config uses it, else stop it; then the imports of the event
   loop and the rest of the coordinator;
6. recovery from the records, then READY=1 to systemd.
Until step 5 this module imports only what those steps need (no asyncio, and no thread is
started), so that the socket is there early and the fork server can be forked.
Stop (SIGTERM, SIGINT, idle, replaced program): unlink the socket first (only if we bound
it) so new commands start a new coordinator, `bye` to event readers, withdraw the peer
record, STOPPING=1. The jobs continue: their supervisors do not depend on us.
"""

from __future__ import annotations

import os

from qex import __version__
from qex.coordinator.log import log, log_exception
from qex.core.model import dataclass
from qex.platform import chaintrace

TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio
    import socket
    from collections.abc import Callable
    from pathlib import Path

    from qex.coordinator.forking import ForkServer
    from qex.core.config import Config
    from qex.store.config_file import Look
    from qex.store.paths import Paths

DEFAULT_IDLE_SECS = 3600.0
#: How long event readers get to receive `bye` at the stop.
BYE_GRACE_SECS = 1.0


def idle_limit(env: dict[str, str] | None = None) -> float:
    """How long an idle coordinator stays: `QEX_IDLE_EXIT_SECS` (more than 0), else an hour."""
    from qex.core.units import env_seconds

    return env_seconds(os.environ if env is None else env, "QEX_IDLE_EXIT_SECS",
                       DEFAULT_IDLE_SECS, low=0.001)


def run(paths: Paths, ready_fd: int | None = None) -> int:
    """The whole life of a coordinator. Returns the process exit code.

    `ready_fd`: a pipe to the command that started this process, told once the socket
    listens (`qex.platform.detach.tell_ready`), so that it sends its request then."""
    from qex.coordinator.forking import ForkServer
    from qex.coordinator.log import configure

    configure(paths.daemon_log)
    forkserver = ForkServer(paths.daemon_log)
    serving = False
    try:
        code = _start(paths, forkserver, ready_fd)
        if not isinstance(code, int):
            serving = True
            code = code()
        return code
    finally:
        if not serving:
            forkserver.stop_unused()


def _start(paths: Paths, forkserver: ForkServer,
           ready_fd: int | None) -> int | Callable[[], int]:
    """Steps 1 to 5: an exit code when this process does not become the coordinator, else
    the call that serves until the stop."""
    from qex.coordinator.forking import wanted
    from qex.coordinator.startup import AnotherCoordinator, StartError, lock_pid_file
    from qex.core.config import ConfigError
    from qex.store.config_file import load_config_and_look
    from qex.store.paths import ensure_private_dir

    try:
        config, look = load_config_and_look(paths)
    except ConfigError as exc:
        log(f"the coordinator did not start: {exc}")
        return 1
    chaintrace.mark("co.config", "-")
    forkserver.start_forked()
    for note in config.notes:
        log(note)
    try:
        ensure_private_dir(paths.state_dir)
        ensure_private_dir(paths.run_dir)
        ensure_private_dir(paths.jobs_dir)
    except OSError as exc:
        log(f"the coordinator did not start: qex cannot make its directories under "
            f"{paths.state_dir} ({exc.strerror or exc})")
        return 1
    try:
        lock_fd = lock_pid_file(paths.pid_file)
    except AnotherCoordinator:
        log("a different coordinator operates for this state directory; this process stops")
        return 0
    except StartError as exc:
        log(f"the coordinator did not start: {exc}")
        return 0
    listener = _listener(paths)
    if isinstance(listener, int):
        os.close(lock_fd)
        return listener
    chaintrace.mark("co.bound", "-")
    from qex.platform.detach import tell_ready

    tell_ready(ready_fd)  # its request waits in the backlog while the rest is imported
    if wanted(config):
        forkserver.warm()  # forked already, unless its log could not be opened then
    else:
        forkserver.stop_unused()
    if config.enforce.mode != "off" and config.enforce.use_systemd:
        # A supervisor waits in a scope of its own for the first job, where one can.
        from qex.platform.launch import start_standby

        start_standby(os.environ, paths.daemon_log)

    def serve() -> int:
        try:
            return _serve(paths, config, look, listener, forkserver)
        finally:
            os.close(lock_fd)

    return serve


def calm_exception_handler(loop: asyncio.AbstractEventLoop, context: dict[str, object]) -> None:
    """asyncio's own faults (an accept that ran out of descriptors): one line per cause.

    asyncio already stops accepting for a second after EMFILE; what must not happen is a
    traceback per try. The repeats are counted (`log_repeating`).
    """
    import errno

    from qex.coordinator.log import log_repeating

    exc = context.get("exception")
    message = str(context.get("message") or "a fault in the event loop")
    if isinstance(exc, OSError):
        why = exc.strerror or str(exc)
        key = f"{message}|{exc.errno}"
        text = f"{message}: {why}"
        if exc.errno in (errno.EMFILE, errno.ENFILE):
            text += ("; new connections wait until descriptors are free (raise `ulimit -n` "
                     "or close idle connections)")
        log_repeating(key, text)
        return
    key = f"{message}|{type(exc).__name__}"
    log_repeating(key, f"{message}: {exc!r}" if exc is not None else message)


@dataclass
class Listener:
    """The listening socket, and the file we bound (None when systemd owns it)."""

    sock: socket.socket
    path: Path | None = None
    inode: int | None = None

    def unlink(self) -> None:
        """Remove our socket file, but never a newer coordinator's at the same path."""
        if self.path is None:
            return
        try:
            if os.lstat(self.path).st_ino == self.inode:
                os.unlink(self.path)
        except OSError:
            pass
        self.path = None


def _listener(paths: Paths) -> Listener | int:
    """systemd's socket, or our own; an exit code when there is none for us."""
    from qex.coordinator.startup import AnotherCoordinator, StartError, bind_socket
    from qex.platform.activation import listen_socket

    inherited = listen_socket()
    if inherited is not None:
        return Listener(inherited)
    try:
        sock = bind_socket(paths.socket_path)
    except AnotherCoordinator as exc:
        log(f"{exc}; this process stops")
        return 0
    except (StartError, OSError) as exc:
        log(f"the coordinator did not start: {exc}")
        return 1
    return Listener(sock, paths.socket_path, os.lstat(paths.socket_path).st_ino)


def _serve(paths: Paths, config: Config, look: Look, listener: Listener,
           forkserver: ForkServer) -> int:
    import asyncio

    try:
        return asyncio.run(_main(paths, config, look, listener, forkserver))
    except Exception:
        log_exception("the coordinator stopped after a fault")
        return 1
    finally:
        listener.unlink()
        listener.sock.close()


async def _main(  # noqa: PLR0915 (the start-up steps, in order)
    paths: Paths, config: Config, look: Look, listener: Listener, forkserver: ForkServer,
) -> int:
    import asyncio
    import signal
    import time

    import qex
    from qex.coordinator.events import EventHub, retained_from_env
    from qex.coordinator.hooks import make_hook_runner
    from qex.coordinator.reaper import reap_children
    from qex.coordinator.recovery import recover
    from qex.coordinator.runner import Runner, remember_program
    from qex.coordinator.server import Server
    from qex.coordinator.state import Coordinator
    from qex.core.protocol import MAX_LINE
    from qex.platform import collector, procs
    from qex.platform import machine as machine_info
    from qex.platform.activation import notify
    from qex.platform.filewatch import FileWatch
    from qex.platform.pollwatch import start_config_watch
    from qex.store.config_file import ConfigWatcher

    chaintrace.mark("co.imported", "-")
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(calm_exception_handler)
    remember_program(qex.__file__, __file__)
    coord = Coordinator(
        paths=paths, config=config, machine=machine_info.machine(),
        events=EventHub(retained=retained_from_env(), version=__version__, pid=os.getpid(),
                        started_at=time.time()),
        started_at=time.time(), idle_limit=idle_limit(), boot_id=procs.boot_id(),
    )
    coord.touch()
    make_hook_runner(coord)
    coord.forkserver = forkserver
    # Children exit at any time from here on; reap them from the start.
    loop.add_signal_handler(signal.SIGCHLD, reap_children, coord)
    recover(coord)
    chaintrace.mark("co.recovered", "-")

    server = Server(coord)
    watcher: ConfigWatcher | None
    try:
        watcher = ConfigWatcher(paths, config, first=look)
    except Exception as exc:
        log(f"the configuration file will not be read again while this coordinator runs: {exc}")
        watcher = None
    file_watch = (start_config_watch(paths.config_file, coord.kick, FileWatch.start)
                  if watcher is not None else None)
    runner = Runner(coord, watcher, server.active_count, file_watch)
    runner.prune_history(coord.now())

    def stop(reason: str) -> None:
        if not coord.stopping:
            coord.stopping = True
            coord.stop_reason = reason
        coord.kick()

    loop.add_signal_handler(signal.SIGTERM, stop, "the coordinator received SIGTERM")
    loop.add_signal_handler(signal.SIGINT, stop, "the coordinator received SIGINT")
    loop.add_signal_handler(signal.SIGHUP, coord.kick)

    listener.sock.setblocking(False)
    unix_server = await asyncio.start_unix_server(server.serve, sock=listener.sock,
                                                  limit=MAX_LINE)
    chaintrace.mark("co.listening", "-")
    where = listener.path or "the socket that systemd passed"
    log(f"the coordinator started; pid {os.getpid()}; version {__version__}; socket {where}")
    notify(f"READY=1\nSTATUS=the queue of {paths.state_dir} is open\nMAINPID={os.getpid()}")
    reap_children(coord)  # anything that exited before the handler existed
    coord.kick()  # the first pass: recovered jobs may start, and `info` gets a queue state
    collector.release()  # held since the process began (`run_daemon`)

    await runner.run()
    for engine in coord.engines.values():
        engine.close()

    # -- stop --------------------------------------------------------------------------------
    notify("STOPPING=1")
    log(f"the coordinator stops: {coord.stop_reason}")
    listener.unlink()
    unix_server.close()
    coord.events.close(coord.stop_reason or "the coordinator stops", coord.now())
    await server.say_goodbye(BYE_GRACE_SECS)
    coord.flush_deferred()
    runner.withdraw_peer()
    coord.forkserver.close()
    if file_watch is not None:
        file_watch.close()
    for client in list(server.clients):
        client.close()
    log("the coordinator stopped")
    return 0
