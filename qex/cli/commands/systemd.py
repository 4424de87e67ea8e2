"""`qex systemd install | uninstall | status`: the socket-activated user units.

For a user who installed qex with pip or pipx: `install` writes qex.socket and qex.service
into the user's systemd directory with the real path of this `qex` and the real socket
path, reloads the user manager and starts the socket. From then on the first command of a
session starts the coordinator through systemd, outside any login session. Without the
units nothing changes: the CLI keeps starting a coordinator itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click

from qex.cli.common import die, get_paths, print_json, warn
from qex.core.pyexec import module_argv, runs_module

SOCKET_UNIT = "qex.socket"
SERVICE_UNIT = "qex.service"
#: Where distribution packages (and administrators) put user units for every user.
PACKAGED_UNIT_DIRS = (Path("/etc/systemd/user"), Path("/usr/local/lib/systemd/user"),
                      Path("/usr/lib/systemd/user"))


# -- facts about this installation --------------------------------------------------------------


def unit_dir(env: dict[str, str] | None = None) -> Path:
    """The user's own unit directory: $XDG_CONFIG_HOME/systemd/user, else ~/.config/..."""
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "systemd" / "user"


def qex_program() -> list[str]:
    """How systemd should start this very qex: the console script when we run as one,
    else this Python with `-m qex`."""
    argv0 = sys.argv[0] if sys.argv else ""
    name = os.path.basename(argv0)
    if name == "qex" or name.startswith("qex-"):
        found = argv0 if os.sep in argv0 else shutil.which(argv0)
        if found and os.access(found, os.X_OK):
            return [str(Path(found).absolute())]
    return module_argv("qex")


def pinned_environment(program: list[str]) -> dict[str, str]:
    """The variables the service needs to find the same config, records and socket as the
    shell that installed it (a user manager does not read shell profiles)."""
    from qex.store.paths import Paths

    paths = Paths.from_env()
    env = {
        "XDG_CONFIG_HOME": str(paths.config_file.parent),
        "XDG_STATE_HOME": str(paths.state_dir.parent),
    }
    if paths.peers_dir_override is not None:
        env["QEX_PEERS_DIR"] = str(paths.peers_dir_override)
    if runs_module(program):
        # `python -m qex` from a checkout: make the package importable from any directory.
        import qex

        env["PYTHONPATH"] = str(Path(qex.__file__).resolve().parent.parent)
    return env


def rendered_units() -> dict[str, str]:
    from qex.platform.user_units import for_user

    paths = get_paths()
    program = qex_program()
    return for_user(socket_path=str(paths.socket_path), exec_start=program,
                    environment=pinned_environment(program))


# -- systemctl ---------------------------------------------------------------------------------


def systemctl(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`systemctl --user ...`; with `check`, a failure ends the command with its message."""
    try:
        proc = subprocess.run(["systemctl", "--user", *args], capture_output=True, text=True,
                              timeout=60, check=False)
    except FileNotFoundError:
        die("systemctl is not on PATH, so qex cannot manage user units here; the CLI keeps "
            "starting its coordinator itself", 1)
    except subprocess.TimeoutExpired:
        die(f"`systemctl --user {' '.join(args)}` did not answer within 60s; check "
            "`systemctl --user status`", 1)
    if check and proc.returncode != 0:
        said = (proc.stderr or proc.stdout).strip().replace("\n", " ")
        die(f"`systemctl --user {' '.join(args)}` failed: {said}", 1)
    return proc


def _state(*args: str) -> str:
    proc = systemctl(*args, check=False)
    return (proc.stdout.strip().splitlines() or [proc.stderr.strip() or "unknown"])[0]


def _manager_reachable() -> str | None:
    """None when a user manager answers, else why not."""
    from qex.platform.detect import user_manager_sockets

    private, bus = user_manager_sockets(os.environ)
    if private is None and bus is None:
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        return (f"no systemd user manager answers at {runtime}/systemd/private" if runtime
                else "XDG_RUNTIME_DIR is not set, so no systemd user manager can be reached")
    return None


def _user() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def _linger_note() -> str | None:
    user = _user()
    if Path("/var/lib/systemd/linger", user).exists():
        return None
    return (f"linger is off for {user}: the coordinator and every job stop when your last "
            f"session ends; run `loginctl enable-linger {user}` to keep them running")


# -- the admin's checklist ----------------------------------------------------------------------

#: The controllers qex asks of user@UID.service: memory for the limits, cpu and io for
#: weights (pids comes with every systemd).
WANTED_CONTROLLERS = ("memory", "cpu", "io")


def probe_where() -> Any:
    """Where the checklist looks (tests replace this with a fake tree)."""
    from qex.platform.detect import Probe

    return Probe()


def packaged_units() -> list[Path]:
    """Socket units that a package or an administrator installed for every user."""
    return [d / SOCKET_UNIT for d in PACKAGED_UNIT_DIRS if (d / SOCKET_UNIT).is_file()]


def checklist(files: dict[str, Any]) -> dict[str, Any]:
    """What an administrator needs to know on one screen: lingering, the cgroup mode, the
    controllers delegated to the user manager, and the exact command for each gap."""
    from qex.platform.detect import _cgroup_mode
    from qex.platform.user_units import DROP_IN_TARGET, drop_in_path

    where = probe_where()
    uid = os.getuid() if where.uid is None else where.uid
    user = _user()
    linger = (where.linger_dir / user).exists()
    mode = _cgroup_mode(where.cgroup_root, where.proc_root)
    delegated: list[str] | None = None
    user_cgroup = (where.cgroup_root / "user.slice" / f"user-{uid}.slice" /
                   f"user@{uid}.service")
    if mode == "unified":
        try:
            delegated = sorted((user_cgroup / "cgroup.controllers").read_text().split())
        except OSError:
            delegated = None
    todo: list[tuple[str, str]] = []
    packaged = [str(p) for p in packaged_units()]
    if not packaged and not all(f["installed"] and f["current"] for f in files.values()):
        todo.append(("qex systemd install",
                     "write the units for this user and start the socket"))
    if not linger:
        todo.append((f"loginctl enable-linger {user}",
                     "keep the coordinator and the jobs running after you log out"))
    if mode != "unified":
        todo.append(("add systemd.unified_cgroup_hierarchy=1 to the kernel command line and "
                     "reboot", "memory limits need a pure cgroup v2 hierarchy"))
    elif delegated is None:
        todo.append(("log in as this user (or enable linger)",
                     f"user@{uid}.service is not running, so nothing is delegated to it"))
    else:
        missing = [c for c in WANTED_CONTROLLERS if c not in delegated]
        if missing:
            todo.append((
                f"sudo install -D -m 0644 {drop_in_path()} {DROP_IN_TARGET} && "
                "sudo systemctl daemon-reload",
                f"delegate {' '.join(missing)} to user@.service; then log out and in again"))
    return {
        "user": user, "linger": linger, "cgroup_mode": mode,
        "user_cgroup": str(user_cgroup), "delegated": delegated,
        "controllers": {c: (delegated is not None and c in delegated)
                        for c in WANTED_CONTROLLERS},
        "packaged_units": packaged,
        "todo": [{"command": cmd, "why": why} for cmd, why in todo],
    }


def _unit_files(target: Path, wanted: dict[str, str]) -> dict[str, Any]:
    files: dict[str, Any] = {}
    for name, text in wanted.items():
        path = target / name
        try:
            current = path.read_text()
        except OSError:
            files[name] = {"path": str(path), "installed": False, "current": False}
            continue
        files[name] = {"path": str(path), "installed": True, "current": current == text}
    return files


def echo_checklist(facts: dict[str, Any]) -> None:
    """The shared lower half of `install --dry-run` and `status`."""
    click.echo(f"{'linger':12} {'on' if facts['linger'] else 'OFF: jobs stop when you log out'}")
    if facts["cgroup_mode"] != "unified":
        click.echo(f"{'cgroups':12} {facts['cgroup_mode']}, not pure cgroup v2: no memory limits")
    elif facts["delegated"] is None:
        click.echo(f"{'delegated':12} unknown: {facts['user_cgroup']} does not exist")
    else:
        said = ", ".join(f"{c} {'yes' if ok else 'NO'}"
                         for c, ok in facts["controllers"].items())
        click.echo(f"{'delegated':12} {said} (user manager has: "
                   f"{' '.join(facts['delegated']) or 'none'})")
    if facts["todo"]:
        click.echo("to do:")
        for item in facts["todo"]:
            click.echo(f"  {item['command']}")
            click.echo(f"      # {item['why']}")
    else:
        click.echo("to do:       nothing; memory limits and socket activation can work here")




def _stop_self_started_coordinator(quiet: bool) -> int | None:
    """A coordinator that the CLI spawned holds the socket path; the socket unit would
    replace the path under it and two coordinators would share one state. Ask it to exit
    (TERM is safe: jobs live in their supervisors) and wait until its lock is free."""
    from qex.cli.coordinator_control import running_pid, stop_running, under_systemd

    paths = get_paths()
    pid = running_pid(paths)
    if pid is None or under_systemd(pid):
        return None
    stopped, _ = stop_running(paths, verb="stop")
    if stopped is not None and not quiet:
        click.echo(f"qex: stopped the coordinator that the CLI had started (pid {stopped}); "
                   "its jobs keep running")
    return stopped


# -- the commands -------------------------------------------------------------------------------


@click.group("systemd")
def command() -> None:
    """Install, remove or check the socket-activated systemd user units of qex.

    The units and the admin drop-in ship inside the qex package (qex/data/systemd/);
    `install` writes them for you, `export` writes them as a distribution package ships
    them, and `drop-in` prints the drop-in that delegates memory, cpu and io to the user
    manager."""


@command.command("install")
@click.option("--dry-run", is_flag=True,
              help="Say where the units go, what is missing and the command for each; "
                   "change nothing.")
@click.option("--units", "show_units", is_flag=True,
              help="With --dry-run, also print the text of both units.")
def install(*, dry_run: bool, show_units: bool) -> None:
    """Write qex.socket and qex.service for this user, reload the user manager and start the
    socket, so the first qex command starts the coordinator through systemd."""
    units = rendered_units()
    target = unit_dir()
    if dry_run:
        if show_units:
            for name, text in units.items():
                click.echo(f"# {target / name}")
                click.echo(text)
        click.echo(f"{'units go to':12} {target}/ ({SOCKET_UNIT}, {SERVICE_UNIT})")
        click.echo(f"{'coordinator':12} {' '.join(qex_program())} daemon --supervised")
        click.echo(f"{'socket':12} {get_paths().socket_path}")
        click.echo(f"{'then':12} systemctl --user daemon-reload && "
                   f"systemctl --user enable --now {SOCKET_UNIT}")
        echo_checklist(checklist(_unit_files(target, units)))
        return
    why = _manager_reachable()
    if why is not None:
        die(f"{why}; the CLI keeps starting its coordinator itself (use --dry-run to see the "
            "units)", 1)
    from qex.store.atomic import write_bytes

    target.mkdir(parents=True, exist_ok=True)
    for name, text in units.items():
        write_bytes(target / name, text.encode(), mode=0o644)
    systemctl("daemon-reload")
    if _state("is-active", SERVICE_UNIT) != "active":
        _stop_self_started_coordinator(quiet=False)
    systemctl("enable", "--now", SOCKET_UNIT)
    search = _state("show", "--property=UnitPath", "--value")
    program = " ".join(qex_program())
    click.echo(f"qex: wrote {target / SOCKET_UNIT} and {target / SERVICE_UNIT} (the coordinator "
               f"runs as `{program} daemon --supervised`)")
    click.echo(f"qex: enabled and started {SOCKET_UNIT}: {get_paths().socket_path} now starts "
               "the coordinator on the first command")
    if search and search != "unknown" and str(target) not in search.split():
        warn(f"{target} is not in the user manager's unit search path ({search}); set "
             "XDG_CONFIG_HOME the same way for systemd, or the units are not found after a "
             "restart")
    note = _linger_note()
    if note:
        warn(note)
    gaps = [t for t in checklist(_unit_files(target, units))["todo"]
            if not t["command"].startswith(("qex systemd install", "loginctl"))]
    for item in gaps:
        warn(f"{item['why']}: {item['command']}")


@command.command("uninstall")
@click.option("--dry-run", is_flag=True, help="Say what would be removed; change nothing.")
def uninstall(*, dry_run: bool) -> None:
    """Stop and disable the socket, stop the coordinator service (never its jobs), remove
    the unit files and reload; the CLI then starts coordinators itself again."""
    target = unit_dir()
    files = [target / name for name in (SOCKET_UNIT, SERVICE_UNIT)]
    if dry_run:
        click.echo(f"# systemctl --user disable --now {SOCKET_UNIT}; systemctl --user stop "
                   f"{SERVICE_UNIT}")
        for path in files:
            click.echo(f"# remove {path}{'' if path.exists() else ' (absent)'}")
        click.echo("# systemctl --user daemon-reload")
        return
    if _manager_reachable() is None:
        systemctl("disable", "--now", SOCKET_UNIT, check=False)
        systemctl("stop", SERVICE_UNIT, check=False)
    removed = []
    for path in files:
        try:
            path.unlink()
            removed.append(str(path))
        except FileNotFoundError:
            pass
    if _manager_reachable() is None:
        systemctl("daemon-reload", check=False)
    if removed:
        click.echo(f"qex: stopped {SOCKET_UNIT} and {SERVICE_UNIT} (running jobs go on) and "
                   f"removed {' and '.join(removed)}")
    else:
        click.echo(f"qex: no qex unit was installed in {target}; nothing to remove")


@command.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def status(*, as_json: bool) -> None:
    """Say where the units are and whether they are current, whether the socket listens,
    whether lingering is on, which cgroup controllers the user manager has, and the exact
    command for each thing that is missing. Exit code 0 either way."""
    target = unit_dir()
    files = _unit_files(target, rendered_units())
    reachable = _manager_reachable()
    units: dict[str, str] = {}
    if reachable is None:
        units = {
            "socket_enabled": _state("is-enabled", SOCKET_UNIT),
            "socket_active": _state("is-active", SOCKET_UNIT),
            "service_active": _state("is-active", SERVICE_UNIT),
        }
    facts = checklist(files)
    data = {"unit_dir": str(target), "files": files, "user_manager": reachable or "reachable",
            "socket_path": str(get_paths().socket_path), "program": qex_program(),
            **facts, **units}
    if as_json:
        print_json(data)
        return
    click.echo(f"{'units go to':12} {target}/")
    for name, info in files.items():
        if not info["installed"]:
            state = "not installed"
        elif info["current"]:
            state = "installed, current"
        else:
            state = "installed, OUT OF DATE (run `qex systemd install` again)"
        click.echo(f"{name:12} {state}: {info['path']}")
    for path in facts["packaged_units"]:
        click.echo(f"{'packaged':12} {path} (installed for every user)")
    if units:
        click.echo(f"{'socket':12} {units['socket_enabled']}, {units['socket_active']}: "
                   f"{data['socket_path']}")
        click.echo(f"{'coordinator':12} {units['service_active']}")
    else:
        click.echo(f"{'systemd':12} {reachable}")
    echo_checklist(facts)


@command.command("export")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--program", default="/usr/bin/qex", show_default=True,
              help="The qex program that ExecStart= runs.")
def export(*, directory: Path, program: str) -> None:
    """Write qex.socket and qex.service into DIRECTORY as a distribution package installs
    them (ExecStart=PROGRAM, the socket under each user's home). For packagers: it changes
    nothing else and talks to no systemd."""
    from qex.platform.user_units import packaged

    directory.mkdir(parents=True, exist_ok=True)
    for name, text in packaged(program).items():
        (directory / name).write_text(text, encoding="utf-8")
        (directory / name).chmod(0o644)
    click.echo(f"qex: wrote {directory / SOCKET_UNIT} and {directory / SERVICE_UNIT}")


@command.command("drop-in")
def drop_in() -> None:
    """Print the drop-in for user@.service that delegates the memory, cpu and io
    controllers to every user's systemd manager (install it as root; the text says how)."""
    from qex.platform.user_units import DROP_IN_FILE, template

    click.echo(template(DROP_IN_FILE), nl=False)
