"""Entry of the supervisor: `python -m qex.supervisor <job_id>` (or `--hook <job_id>`).

The coordinator starts this after it wrote `starting` into status.json, in a session of its
own, so neither the coordinator's death nor a terminal hang-up reaches it (and it never asks
for a parent-death signal: outliving the coordinator is its purpose).

Start-up, in order, before the job is touched:
1. read spec.json and the config (a broken file: defaults, and a sentence in `error` that
   says so). Neither read touches the job, so a supervisor that the fork server holds or
   parks makes them while it waits for its go (`gate`): the spec is final before any start
   is asked for, and the config is read for this start either way;
2. pass the gate, when there is one (a held or parked child of the fork server);
3. read status.json (a record that is not `starting` is left alone);
4. when `QEX_SUPERVISOR_GO_FD` is set (every supervisor the coordinator starts fresh), wait
   for one byte on it: the coordinator sends it once it has named this process in
   `supervisor.pid`, and with a pystemd scope once this process sits in it. End-of-file
   means the coordinator stopped before the go: the job is left as it is, `starting` and
   untouched, and the next coordinator queues it again (a scope that could not be made
   never comes here: the coordinator kills this process before it closes the pipe);
5. take `supervisor.lock` in the job directory, so two supervisors never write one record;
6. open the sandbox of the job (`QEX_TEST_SANDBOX` replaces it in tests only).

Imports stay small on purpose: one supervisor runs per running job, so every megabyte here is
multiplied. No click, yaml, psutil or asyncio on this path.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Callable

from qex.core.config import Config, ConfigError
from qex.core.names import is_uuid
from qex.core.states import State
from qex.platform import chaintrace, collector
from qex.platform.sandbox import Sandbox
from qex.store import jobs
from qex.store.paths import PathError, Paths
from qex.supervisor.runner import Runner, job_child, say
from qex.supervisor.spawn import prepare

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from qex.core.records import JobSpec

USAGE = (
    "usage: python -m qex.supervisor <job-id>  |  python -m qex.supervisor --hook <job-id>  |  "
    "python -m qex.supervisor --forkserver"
)
GO_FD_VAR = "QEX_SUPERVISOR_GO_FD"
LOCK_FILE = jobs.SUPERVISOR_LOCK
#: A reader probes the lock for an instant (`jobs.supervisor_lock_free`); a start that meets
#: such a probe tries again this many times, 10 ms apart, before it concludes that another
#: supervisor holds the job.
_LOCK_TRIES = 50
#: What `supervise` returns when its gate stays closed (no go, or a go outside a scope).
GATE_CLOSED = 3


def main(argv: list[str] | None = None) -> int:
    """One job's supervisor (`<job-id>` or `--hook <job-id>`); the fork server's entry is
    `qex.supervisor.__main__`, which imports this module and never the other way round."""
    args = list(sys.argv[1:] if argv is None else argv)
    hook_only = "--hook" in args
    rest = [arg for arg in args if arg != "--hook"]
    if len(rest) != 1 or not is_uuid(rest[0]):
        print(USAGE, file=sys.stderr)
        return 2
    job_id = rest[0].lower()
    try:
        paths = Paths.from_env()
    except PathError as exc:
        say(str(exc))
        return 1
    if hook_only:
        from qex.supervisor.hook import run_stop_hook

        collector.release()  # held since `entry`; a hook may run for a long time
        run_stop_hook(paths, job_id, origin="coordinator")
        return 0
    return supervise(paths, job_id)


def supervise(paths: Paths, job_id: str, *,
              open_sandbox: Callable[[str, Config], Sandbox] | None = None,
              notes: list[str] | None = None,
              env_overrides: dict[str, str | None] | None = None,
              gate: Callable[[], bool] | None = None,
              spawner_early: bool = False) -> int:
    """Run the job (`run_job`); the exit code of this supervisor."""
    return run_job(paths, job_id, open_sandbox=open_sandbox, notes=notes,
                   env_overrides=env_overrides, gate=gate, spawner_early=spawner_early)[0]


def run_job(paths: Paths, job_id: str, *,
            open_sandbox: Callable[[str, Config], Sandbox] | None = None,
            notes: list[str] | None = None,
            env_overrides: dict[str, str | None] | None = None,
            gate: Callable[[], bool] | None = None,
            spawner_early: bool = False) -> tuple[int, bool]:
    """Run the job; the exit code, and whether the job is settled: its result written and
    taken by the coordinator, the sandbox closed and the lock let go, with no fault on the
    way. Only a settled supervisor may serve another job (the fork server's spares).

    An engine's node program passes the sandbox of its allocation, and a list of sentences
    for the record's `error` that it may add to while the job runs (the supervisor reads the
    same list when it writes the end).

    `gate` is the fork server's wait for the coordinator's go: it is passed after the reads
    that do not touch the job, so they overlap the coordinator's sync of `starting` (or the
    user manager's work on a scope) instead of following it. A closed gate returns
    `GATE_CLOSED` with nothing of the job touched. `spawner_early` (a gate with no scope
    behind it) starts the thread that will spawn the job before the gate, for the same
    reason: it touches nothing of the job."""
    chaintrace.mark("sup.start", job_id)
    job_dir = paths.job_dir(job_id)
    spec = jobs.read_spec(job_dir)
    config, config_notes = _load_config(paths, job_id)
    chaintrace.mark("sup.config", job_id)
    if spawner_early and spec is not None:
        _prepare_spawner(spec, config)
    if gate is not None and not gate():
        return GATE_CLOSED, False
    status = jobs.read_status(job_dir)
    if spec is None or status is None:
        say(f"the job {job_id} has no readable spec.json and status.json in {job_dir}; "
            "nothing was started")
        return 1, False
    if status.state != State.STARTING.value:
        say(f"the job {job_id} is `{status.state}`, not `starting`, so this supervisor "
            "leaves it alone")
        return 1, False
    chaintrace.mark("sup.read", job_id)
    if _wait_for_go() is False:
        _unname(job_dir)
        say(f"the coordinator stopped before it let this supervisor start the job {job_id}; "
            "the job was not touched, and the next coordinator queues it again")
        return GATE_CLOSED, False
    chaintrace.mark("sup.go", job_id)
    lock = _take_lock(job_dir)
    if lock is None:
        say(f"another supervisor already runs the job {job_id}; this one stops")
        return 1, False
    chaintrace.mark("sup.locked", job_id)
    if notes is None:
        notes = config_notes
    else:
        notes[:0] = config_notes
    sandbox = (open_sandbox or _open_sandbox)(job_id, config)
    runner = Runner(paths, spec, status, config, notes=notes, sandbox=sandbox,
                    env_overrides=env_overrides)
    chaintrace.mark("sup.sandbox", job_id)
    collector.release()  # a new supervisor process held it from its start (`entry`)
    settled = False
    try:
        runner.run()
        settled = runner.status.final and runner.final_noted
    except Exception as exc:
        runner.abort(exc)
    finally:
        try:
            sandbox.close()
        except Exception as exc:
            settled = False
            say(f"the sandbox of the job did not close cleanly: {exc!r}")
        os.close(lock)
    return 0, settled


def _prepare_spawner(spec: JobSpec, config: Config) -> None:
    """Start the fast path's spawner thread for the nice and I/O class this job will ask for
    (`job_child`, as for the job itself). It sets itself up in about a millisecond on a
    freshly forked supervisor, which after the go was a step of every job's start. Nothing
    of the job is touched; a job that takes the fork path after all leaves it idle."""
    prepare(job_child(spec, config, {}, None))


def _wait_for_go() -> bool | None:
    """None without a go descriptor; True after the byte; False at end-of-file."""
    raw = os.environ.pop(GO_FD_VAR, None)
    if raw is None:
        return None
    try:
        fd = int(raw)
    except ValueError:
        say(f"{GO_FD_VAR}={raw!r} is not a descriptor number; the job does not start")
        return False
    try:
        while True:
            try:
                byte = os.read(fd, 1)
                break
            except InterruptedError:
                continue
    except OSError as exc:
        say(f"qex could not read the go signal on descriptor {fd}: {exc}")
        byte = b""
    try:
        os.close(fd)
    except OSError:
        pass
    return bool(byte)


def _unname(job_dir: Path) -> None:
    """Remove `supervisor.pid` when it names this process, which never got its go: the
    coordinator writes the name just before the go, so a coordinator killed between the two
    left a name whose process exits untouched, and recovery would fail the job for a
    supervisor that died. Without the name it queues the job again, as it should."""
    if jobs.read_supervisor_pid_file(job_dir)[0] != os.getpid():
        return  # no name, or one that is not ours: nothing to take back
    try:
        os.unlink(job_dir / jobs.SUPERVISOR_PID)
    except OSError:
        pass  # gone already


def _take_lock(job_dir: os.PathLike[str]) -> int | None:
    try:
        fd = os.open(os.path.join(job_dir, LOCK_FILE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        say(f"qex could not open {LOCK_FILE} in {job_dir}: {exc}")
        return None
    for _attempt in range(_LOCK_TRIES):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            time.sleep(0.01)
        except OSError:
            break
        else:
            return fd
    os.close(fd)
    return None


def remember_config(paths: Paths) -> None:
    """In the fork server, before a fork: parse the config file once per content
    (`config_file.parsed_config`), so that a forked supervisor whose file still holds the
    same bytes takes the result as it is.

    Measured in a forked child: parsing touched about 300 pages that the child shares with
    the server, each a copy-on-write fault (2 ms of a supervisor's start on an idle virtual
    machine, many more on a loaded one). A file that cannot be read or parsed is left to
    the child, which says why in the job's record.
    """
    from qex.store.config_file import CONTENT, look_at, parsed_config

    look = look_at(paths.config_file)
    if look.kind != CONTENT:
        return
    try:
        parsed_config(look, paths.config_file)
    except ConfigError:
        pass


def _load_config(paths: Paths, job_id: str) -> tuple[Config, list[str]]:
    """The config, read once for this job; a broken file gives the defaults and a sentence.

    The file is always read here (it may have changed since the fork server looked); only
    the parse is skipped when its bytes are the ones the server parsed."""
    try:
        from qex.store.config_file import look_at, parsed_config

        return parsed_config(look_at(paths.config_file), paths.config_file), []
    except (ConfigError, OSError, ImportError) as exc:
        text = " ".join(str(exc).split())
        say(f"the config file could not be read: {text}")
        return Config(), [
            f"qex could not read the config file ({text}), so this job runs with the default "
            "values and no limit from that file operates; correct the file (`qex config show` "
            f"gives the whole message) and run the job again with `qex rerun {job_id[:8]}`"
        ]


def _fallback_sandbox(reason: str) -> Sandbox:
    from qex.platform.procgroup import ProcessGroupSandbox

    return ProcessGroupSandbox(reason=reason)


def _open_sandbox(job_id: str, config: Config) -> Sandbox:
    try:
        script = os.environ.get("QEX_TEST_SANDBOX")
        if script:
            from pathlib import Path

            from qex.testing.scripted_sandbox import ScriptedSandbox

            return ScriptedSandbox(Path(script))
        from qex.platform.select import open_sandbox

        return open_sandbox(job_id, config.enforce.mode, use_systemd=config.enforce.use_systemd)
    except Exception as exc:
        say(f"qex could not open the sandbox of the job: {exc!r}")
        return _fallback_sandbox(f"qex could not open a sandbox for this job ({exc})")
