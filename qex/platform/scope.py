"""Transient systemd user scopes: one per supervisor, so every job has a cgroup of its own.

Two backends put a process into `qex-<id8>-<n>.scope` (slice `qex.slice`, Delegate=yes):

* pystemd: the coordinator spawns the supervisor, then asks the user manager over D-Bus
  (`StartTransientUnit` with `PIDs=[pid]`) to wrap it in a scope, waits for the start job,
  and checks `/proc/<pid>/cgroup` itself (systemd issue 36781: a scope can report success
  while the process was never moved). `PystemdScopeManager` does the D-Bus part.
* systemd-run: `systemd-run --user --scope ... -- <supervisor argv>` creates the scope around
  its own pid and then execs the supervisor in place. `systemd_run_argv` builds that line.
  Since the supervisor can only start after its scope, the launcher starts the next one
  ahead of need in a scope of its own (`standby_unit_name`), where it waits for its job;
  with either backend, wherever systemd-run is installed.

pystemd is imported only inside `PystemdBus`, in the coordinator, never in a supervisor.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from qex.core.model import dataclass, field

SLICE = "qex.slice"
_UNIT_PREFIX = "qex-"
_UNSAFE_UNIT_CHARS = re.compile(r"[^A-Za-z0-9_]")
_SCOPE_RE = re.compile(r"^qex-[A-Za-z0-9_]+-[0-9]+\.scope$")


class ScopeError(RuntimeError):
    """The user manager could not make the scope; the message says what it answered."""


@dataclass(frozen=True)
class ScopeRequest:
    """What qex asks of the user manager for one supervisor's scope."""

    unit: str
    slice: str = SLICE
    description: str = ""
    delegate: bool = True
    #: Forget the unit once it is inactive or failed, so names and results do not pile up.
    collect_mode: str = "inactive-or-failed"
    #: `continue`: a kernel OOM kill inside the scope must not make systemd stop the whole
    #: scope (its default for transient scopes is `stop`, which would SIGTERM the supervisor
    #: before it records the kill). None leaves the manager's default.
    oom_policy: str | None = "continue"


def unit_name(job_id: str, sequence: int) -> str:
    """`qex-<first 8 characters of the id>-<n>.scope`, with unit-safe characters only."""
    short = _UNSAFE_UNIT_CHARS.sub("_", job_id[:8]) or "job"
    return f"{_UNIT_PREFIX}{short}-{sequence}.scope"


def standby_unit_name() -> str:
    """`qex-standby_<8 random hex digits>-1.scope`: the scope of a supervisor started before
    its job was known (`qex.platform.launch`), so it cannot carry the job's id. The job's
    record names it (`enforcement.unit`)."""
    return f"{_UNIT_PREFIX}standby_{os.urandom(4).hex()}-1.scope"


def is_qex_scope(name: str) -> bool:
    return bool(_SCOPE_RE.match(name))


def scope_in_path(cgroup_path: str) -> tuple[str, str] | None:
    """(scope cgroup path, unit name) when the path lies in a qex scope, else None.

    The supervisor may already sit in the scope's `supervisor/` leaf; the scope is then the
    nearest ancestor whose name is a qex scope name.
    """
    parts = [p for p in cgroup_path.split("/") if p]
    for index in range(len(parts) - 1, -1, -1):
        if is_qex_scope(parts[index]):
            return "/" + "/".join(parts[: index + 1]), parts[index]
    return None


def in_unit(cgroup_path: str | None, unit: str) -> bool:
    """True when a cgroup path is the unit's cgroup or lies below it."""
    if not cgroup_path:
        return False
    return unit in cgroup_path.split("/")


def _systemd_quote_property(value: str) -> str:
    return value.replace("\n", " ")


def systemd_run_argv(
    request: ScopeRequest, command: list[str], systemd_run: str = "systemd-run"
) -> list[str]:
    """`systemd-run --user --scope ...  -- command`: the scope wraps systemd-run's own pid,
    which then becomes the command through exec, so the command starts inside the scope."""
    argv = [
        systemd_run, "--user", "--scope", "--quiet", "--collect",
        f"--unit={request.unit}", f"--slice={request.slice}",
    ]
    if request.description:
        argv.append(f"--description={_systemd_quote_property(request.description)}")
    if request.delegate:
        argv += ["-p", "Delegate=yes"]
    if request.oom_policy:
        argv += ["-p", f"OOMPolicy={request.oom_policy}"]
    return [*argv, "--", *command]


def scope_properties(request: ScopeRequest, pid: int, *, with_oom_policy: bool) -> dict[str, Any]:
    """The StartTransientUnit properties for a scope around `pid`."""
    props: dict[str, Any] = {
        "PIDs": [pid],
        "Slice": request.slice,
        "Delegate": request.delegate,
        "CollectMode": request.collect_mode,
    }
    if request.description:
        props["Description"] = request.description
    if with_oom_policy and request.oom_policy:
        props["OOMPolicy"] = request.oom_policy
    return props


class ManagerBus(Protocol):
    """The two calls qex needs from the user manager's D-Bus API."""

    def start_transient_unit(self, name: str, properties: dict[str, Any]) -> str:
        """Queue the start job; returns its object path. Raises on a refusal."""

    def wait_job(self, job: str, timeout: float) -> str:
        """Block until the job is removed; returns its result (`done`, `failed`, ...)."""

    def close(self) -> None:
        """Drop the connection."""


class ScopeManager(Protocol):
    name: str

    def start(self, request: ScopeRequest, pid: int, timeout: float) -> None:
        """Wrap `pid` in the scope; return once the start job is done. Raises ScopeError."""


# -- pystemd ---------------------------------------------------------------------------------

_DEST = b"org.freedesktop.systemd1"
_PATH = b"/org/freedesktop/systemd1"
_IFACE = b"org.freedesktop.systemd1.Manager"

#: Properties qex sends that pystemd 0.15's signature table lacks (its issue 119 class).
_MISSING_SIGNATURES = {b"PIDs": b"au", b"OOMPolicy": b"s"}


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (list, tuple)) and value:
        return _as_bytes(value[0])
    return str(value).encode()


class PystemdBus:
    """The user bus through pystemd (sd-bus): StartTransientUnit and JobRemoved.

    The connection subscribes to the manager's signals once and keeps every JobRemoved it
    sees, so a start job that finishes before its reply was read is not missed.
    """

    def __init__(self) -> None:
        from pystemd.dbuslib import DBus
        from pystemd.systemd1 import unit_signatures

        for key, signature in _MISSING_SIGNATURES.items():
            unit_signatures.KNOWN_UNIT_SIGNATURES.setdefault(key, signature)
        self._signature_array = unit_signatures.signature_array
        from pystemd.dbuslib import apply_signature

        self._apply_signature = apply_signature
        self._results: dict[bytes, bytes] = {}
        bus = DBus(user_mode=True)
        bus.open()
        self._bus = bus

        def on_job_removed(msg: Any, error: Any = None, userdata: Any = None) -> None:
            # Runs inside sd_bus_process; an exception here could not reach us, so none leaves.
            try:
                msg.process_reply(False)
                body = list(msg.body)
                self._results[_as_bytes(body[1])] = _as_bytes(body[3])
            except Exception:
                pass

        # pystemd keeps only a borrowed pointer to the callback: hold a reference.
        self._callback = on_job_removed
        bus.match_signal(None, _PATH, _IFACE, b"JobRemoved", on_job_removed, None)
        bus.call_method(_DEST, _PATH, _IFACE, b"Subscribe", [])

    def start_transient_unit(self, name: str, properties: dict[str, Any]) -> str:
        encoded: dict[bytes, Any] = {}
        for key, value in properties.items():
            encoded[key.encode()] = value.encode() if isinstance(value, str) else value
        args = self._apply_signature(b"ss", [name.encode(), b"fail"])
        args += self._signature_array(encoded)
        args += [(ord("a"), b"(sa(sv))"), (-1, None)]
        reply = self._bus.call_method(_DEST, _PATH, _IFACE, b"StartTransientUnit", args)
        return _as_bytes(reply.body).decode()

    def wait_job(self, job: str, timeout: float) -> str:
        key = job.encode()
        deadline = time.monotonic() + timeout
        while True:
            self._bus.process()
            if key in self._results:
                return self._results.pop(key).decode()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ScopeError(
                    f"the user manager did not finish the start job {job} in {timeout:g}s"
                )
            # sd_bus_wait returns at once when a message is queued, else when one arrives.
            self._bus.wait(int(min(remaining, 1.0) * 1_000_000))

    def close(self) -> None:
        try:
            self._bus.close()
        except Exception:
            pass


@dataclass
class PystemdScopeManager:
    """Scopes through the user manager's D-Bus API; one cached connection per process."""

    bus_factory: Callable[[], ManagerBus] = PystemdBus
    name: str = "pystemd"
    #: False once the manager refused OOMPolicy for a scope (systemd before it knew it).
    oom_policy_accepted: bool = True
    _bus: ManagerBus | None = None
    _owner_pid: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _connection(self) -> ManagerBus:
        if self._bus is None or self._owner_pid != os.getpid():
            try:
                self._bus = self.bus_factory()
            except Exception as exc:
                message = f"cannot reach the systemd user manager over D-Bus: {exc}"
                raise ScopeError(message) from None
            self._owner_pid = os.getpid()
        return self._bus

    def _drop(self) -> None:
        if self._bus is not None:
            self._bus.close()
        self._bus = None

    def start(self, request: ScopeRequest, pid: int, timeout: float = 10.0) -> None:
        with self._lock:
            bus = self._connection()
            try:
                try:
                    job = bus.start_transient_unit(
                        request.unit,
                        scope_properties(request, pid, with_oom_policy=self.oom_policy_accepted),
                    )
                except ScopeError:
                    raise
                except Exception as first:
                    if not (self.oom_policy_accepted and request.oom_policy):
                        message = f"systemd refused the scope {request.unit}: {first}"
                        raise ScopeError(message) from None
                    # An older manager rejects OOMPolicy for scopes: ask again without it.
                    try:
                        job = bus.start_transient_unit(
                            request.unit, scope_properties(request, pid, with_oom_policy=False)
                        )
                    except Exception as second:
                        message = f"systemd refused the scope {request.unit}: {second}"
                        raise ScopeError(message) from None
                    self.oom_policy_accepted = False
                result = bus.wait_job(job, timeout)
            except ScopeError:
                self._drop()
                raise
            except Exception as exc:
                self._drop()
                message = f"the D-Bus call for the scope {request.unit} failed: {exc}"
                raise ScopeError(message) from None
            if result != "done":
                raise ScopeError(f"systemd could not start the scope {request.unit}: its start "
                                 f"job ended `{result}`")
