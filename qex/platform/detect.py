"""What enforcement this machine can offer, probed once per process.

`detect()` answers for the whole of qex: `qex config show` and `qex info` print it, the
coordinator uses it to decide whether a supervisor goes into a scope, and the record of each
job repeats its reason when no limit could be set. The checks run in the order in which a
machine fails in practice, and the first failure becomes `reason` (with `fix`, the remedy):
not Linux, no unified cgroup v2 hierarchy, `[enforce] use_systemd = false`, no systemd user
manager, memory not delegated to user@UID.service, no scope backend.

It must stay cheap: a few file reads and one connect() to the user manager's private
socket; no process is spawned and pystemd is looked up, never imported.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from qex.core.model import asdict, dataclass, field
from qex.platform import host

BACKENDS = ("pystemd", "systemd-run")
DROP_IN = "/etc/systemd/system/user@.service.d/qex-delegate.conf"


@dataclass(frozen=True)
class Capabilities:
    os: str
    cgroup_v2: bool = False
    systemd_user: bool = False
    delegated: tuple[str, ...] = ()
    psi: bool = False
    pystemd: bool = False
    systemd_run: bool = False
    scope_backend: str | None = None     # "pystemd" | "systemd-run" | None
    enforcement_possible: bool = False
    reason: str | None = None            # why enforcement is NOT ACTIVE
    fix: str | None = None               # what would make it active
    details: dict[str, Any] = field(default_factory=dict)
    #: "unified" | "hybrid" | "legacy" | "none" | "n/a"
    cgroup_mode: str = "n/a"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = asdict(self)
        data["delegated"] = list(self.delegated)
        return data


@dataclass(frozen=True)
class Probe:
    """Where `probe()` looks; tests point every field at a fake tree.

    `platform` is `qex.platform.host.system_name()`: `portable` under the switch, so the
    probe answers as it would on a system without Linux.
    """

    platform: str = field(default_factory=host.system_name)
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    cgroup_root: Path = Path("/sys/fs/cgroup")
    proc_root: Path = Path("/proc")
    linger_dir: Path = Path("/var/lib/systemd/linger")
    #: Exists when PID 1 is systemd (sd_booted).
    booted_marker: Path = Path("/run/systemd/system")
    uid: int | None = None
    which: Callable[[str], str | None] = field(default_factory=lambda: _which)
    has_module: Callable[[str], bool] | None = None
    connect: Callable[[Path], bool] | None = None


def _which(name: str) -> str | None:
    from qex.platform.which import which

    return which(name)


def _module_exists(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _socket_answers(path: Path) -> bool:
    """A listening Unix socket at `path` (a connect, nothing sent)."""
    try:
        if not stat.S_ISSOCK(os.stat(path).st_mode):
            return False
    except OSError:
        return False
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    sock.settimeout(0.5)
    try:
        sock.connect(os.fspath(path))
        return True
    except OSError:
        return False
    finally:
        sock.close()


def _cgroup_mode(cgroup_root: Path, proc_root: Path) -> str:
    """`unified` when cgroup2 is mounted at the cgroup root, else hybrid/legacy/none.

    Both signs must agree for `unified`: the root's cgroup.controllers file (v2 only) and a
    cgroup2 line for that mount point in /proc/self/mountinfo.
    """
    mounts: dict[str, str] = {}
    try:
        text = (proc_root / "self" / "mountinfo").read_text()
    except OSError:
        text = ""
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields = left.split()
        if len(fields) >= 5 and right.split():
            mounts[fields[4]] = right.split()[0]
    root = os.fspath(cgroup_root)
    if mounts.get(root) == "cgroup2" and (cgroup_root / "cgroup.controllers").exists():
        return "unified"
    below = {point: kind for point, kind in mounts.items() if point.startswith(root + "/")}
    if "cgroup2" in below.values():
        return "hybrid"
    if "cgroup" in below.values():
        return "legacy"
    if not mounts and (cgroup_root / "cgroup.controllers").exists():
        # No mountinfo to read (a fake tree in tests, a locked-down /proc): trust the file.
        return "unified"
    return "none"


def user_manager_sockets(
    env: Mapping[str, str], connect: Callable[[Path], bool] | None = None
) -> tuple[Path | None, Path | None]:
    """(private socket, bus socket) of the user manager, each only when it answers."""
    connect = connect or _socket_answers
    runtime = env.get("XDG_RUNTIME_DIR", "")
    private = bus = None
    if runtime:
        candidate = Path(runtime) / "systemd" / "private"
        if connect(candidate):
            private = candidate
    address = env.get("DBUS_SESSION_BUS_ADDRESS", "")
    bus_path: Path | None = None
    for part in address.split(";"):
        if part.startswith("unix:"):
            for item in part[5:].split(","):
                key, _, value = item.partition("=")
                if key == "path" and value:
                    bus_path = Path(value)
    if bus_path is None and runtime:
        bus_path = Path(runtime) / "bus"
    if bus_path is not None and connect(bus_path):
        bus = bus_path
    return private, bus


def _user_name(uid: int) -> str | None:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (KeyError, ImportError):
        return None


def probe(  # noqa: C901, PLR0912 (one probe after another)
    where: Probe | None = None, *, use_systemd: bool = True,
) -> Capabilities:
    """Run every check once and say the first that fails (uncached; see `detect`)."""
    p = where or Probe()
    connect = p.connect or _socket_answers
    has_module = p.has_module or _module_exists
    details: dict[str, Any] = {}

    if not p.platform.startswith("linux"):
        if p.platform == host.PORTABLE:
            fix = (f"unset {host.ENV_VAR}; it is a test aid that selects the code paths of "
                   "macOS and other systems without systemd")
        else:
            fix = ("none on this system: the soft and hard modes need Linux with cgroup v2 "
                   "and systemd")
        return Capabilities(
            os=p.platform,
            reason=(f"{host.describe(p.platform)}, so jobs run as plain process groups and "
                    "qex can set no memory limit"),
            fix=fix,
        )

    uid = os.getuid() if p.uid is None else p.uid
    user = _user_name(uid)
    details["uid"] = uid
    if user:
        details["linger"] = (p.linger_dir / user).exists()
    details["systemd_pid1"] = p.booted_marker.is_dir()
    psi = (p.proc_root / "pressure" / "memory").exists()
    pystemd_found = has_module("pystemd")
    systemd_run = p.which("systemd-run") is not None
    mode = _cgroup_mode(p.cgroup_root, p.proc_root)
    base: dict[str, Any] = dict(
        os=p.platform, psi=psi, pystemd=pystemd_found, systemd_run=systemd_run,
        cgroup_mode=mode, cgroup_v2=mode == "unified", details=details,
    )

    def fail(reason: str, fix: str, **extra: Any) -> Capabilities:
        return Capabilities(**{**base, **extra}, reason=reason, fix=fix)

    boot_fix = ("boot with `systemd.unified_cgroup_hierarchy=1` on the kernel command line "
                "(pure cgroup v2, the default of current distributions) and reboot")
    if mode == "hybrid":
        return fail("cgroups are in hybrid v1/v2 mode (the memory controller is on the v1 "
                    "tree), so a job cannot get a memory cgroup of its own", boot_fix)
    if mode == "legacy":
        return fail("cgroups are in legacy v1 mode, so a job cannot get a memory cgroup "
                    "of its own", boot_fix)
    if mode != "unified":
        return fail(f"no cgroup v2 hierarchy is mounted at {p.cgroup_root}", boot_fix)

    if not use_systemd:
        return fail("the config file sets [enforce] use_systemd = false, and qex makes a "
                    "job's cgroup only through a systemd user scope",
                    "set [enforce] use_systemd = true in the config file")

    private, bus = user_manager_sockets(p.env, connect)
    details["manager_socket"] = os.fspath(private) if private else None
    details["bus_socket"] = os.fspath(bus) if bus else None
    if private is None and bus is None:
        where_text = (f"nothing answers at {p.env['XDG_RUNTIME_DIR']}/systemd/private"
                      if p.env.get("XDG_RUNTIME_DIR") else "XDG_RUNTIME_DIR is not set")
        return fail(f"no systemd user manager is reachable ({where_text})",
                    "log in through a session that starts user@UID.service (pam_systemd), or "
                    f"run `loginctl enable-linger {user or '$USER'}` so the user manager runs "
                    "without a login")
    base["systemd_user"] = True

    user_cgroup = f"/user.slice/user-{uid}.slice/user@{uid}.service"
    details["user_cgroup"] = user_cgroup
    controllers_file = p.cgroup_root / user_cgroup.lstrip("/") / "cgroup.controllers"
    try:
        delegated = tuple(sorted(controllers_file.read_text().split()))
    except OSError:
        return fail(f"the cgroup of user@{uid}.service is missing ({controllers_file})",
                    "start qex from a login of this user (or enable linger) so that "
                    f"user@{uid}.service runs")
    base["delegated"] = delegated
    if "memory" not in delegated:
        have = " ".join(delegated) or "none"
        return fail(f"the memory controller is not delegated to user@{uid}.service "
                    f"(it has: {have})",
                    f"install the drop-in qex ships as {DROP_IN} (Delegate=pids memory cpu io), "
                    "run `systemctl daemon-reload`, then log in again")

    forced = p.env.get("QEX_SCOPE_BACKEND", "").strip()
    if forced and forced not in BACKENDS:
        return fail(f"QEX_SCOPE_BACKEND is `{forced}`, which is not a scope backend",
                    "set QEX_SCOPE_BACKEND to pystemd or systemd-run, or unset it")
    usable = {
        # pystemd speaks D-Bus, so it needs the bus socket (dbus-user-session).
        "pystemd": pystemd_found and bus is not None,
        "systemd-run": systemd_run,
    }
    if forced:
        if not usable[forced]:
            missing = {"pystemd": "pystemd is not installed or the user bus is not running",
                       "systemd-run": "systemd-run is not on PATH"}[forced]
            return fail(f"QEX_SCOPE_BACKEND asks for {forced}, but {missing}",
                        "unset QEX_SCOPE_BACKEND, or install what it names")
        backend = forced
    elif usable["pystemd"]:
        backend = "pystemd"
    elif usable["systemd-run"]:
        backend = "systemd-run"
    else:
        return fail("neither pystemd (with the user bus) nor systemd-run is available to "
                    "make a scope",
                    "install systemd's systemd-run, or `pip install 'qex-queue[systemd]'` for "
                    "pystemd")
    return Capabilities(**base, scope_backend=backend, enforcement_possible=True)


_cached: dict[bool, Capabilities] = {}


def detect(use_systemd: bool = True) -> Capabilities:
    """Probe once per process (per `use_systemd` value); later calls return the same answer."""
    found = _cached.get(use_systemd)
    if found is None:
        found = probe(use_systemd=use_systemd)
        _cached[use_systemd] = found
    return found


def reset_cache() -> None:
    """Forget the answer (tests, and a coordinator that was told the machine changed)."""
    _cached.clear()


def enforcement_state(mode: str, caps: Capabilities) -> dict[str, Any]:
    """What `[enforce] mode` does on this machine, as facts: the one summary that `qex info`
    (through the coordinator) and `qex config show` both give."""
    possible = bool(caps.enforcement_possible)
    active = mode != "off" and possible
    if mode == "off":
        reason: str | None = '[enforce] mode is "off", so a claim steers the queue only'
        fix: str | None = ('set [enforce] mode = "hard" (or "soft") in the config file'
                           if possible else None)
    elif active:
        reason, fix = None, None
    else:
        reason, fix = caps.reason, caps.fix
    return {"mode": mode, "active": active, "possible": possible, "reason": reason, "fix": fix,
            "backend": caps.scope_backend}


def _sentence(text: str | None) -> str:
    return (text or "no reason was given").rstrip(". ")


def enforcement_summary(mode: str, caps: Capabilities, *, mem_overcommit: float = 1.5) -> str:
    """The same facts as one line for people (`config show`)."""
    state = enforcement_state(mode, caps)
    if mode == "off":
        if state["possible"]:
            return ("mode: off — a claim steers the queue only and sets no limit on a job; "
                    "soft or hard WOULD work here")
        return ("mode: off — a claim steers the queue only and sets no limit on a job; soft or "
                f"hard would not work here either: {_sentence(caps.reason)}")
    if state["active"]:
        what = ("the kernel stops a job at its memory claim" if mode == "hard" else
                "the kernel slows a job at its memory claim and stops it at "
                f"{mem_overcommit:g} times the claim")
        return (f"mode: {mode} — active: {what}, each job in a cgroup of its own "
                f"({caps.scope_backend})")
    return (f"mode: {mode} — NOT ACTIVE: {_sentence(state['reason'])}. "
            f"Fix: {_sentence(state['fix'])}. Until then jobs run with no memory limit")
