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
import time
from pathlib import Path
from typing import Any

import click

from qex.cli.common import die, get_paths, print_json, warn

SOCKET_UNIT = "qex.socket"
SERVICE_UNIT = "qex.service"


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
    return [sys.executable, "-m", "qex"]


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
    if program[1:2] == ["-m"]:
        # `python -m qex` from a checkout: make the package importable from any directory.
        import qex

        env["PYTHONPATH"] = str(Path(qex.__file__).resolve().parent.parent)
    return env


def rendered_units() -> dict[str, str]:
    from qex.platform.user_units import UNITS, render

    paths = get_paths()
    program = qex_program()
    environment = pinned_environment(program)
    return {
        name: render(template, socket_path=str(paths.socket_path), exec_start=program,
                     environment=environment)
        for name, template in UNITS.items()
    }


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


def _linger_note() -> str | None:
    import pwd

    user = pwd.getpwuid(os.getuid()).pw_name
    if Path("/var/lib/systemd/linger", user).exists():
        return None
    return (f"linger is off for {user}: the coordinator and every job stop when your last "
            f"session ends; run `loginctl enable-linger {user}` to keep them running")


def _stop_self_started_coordinator(quiet: bool) -> int | None:
    """A coordinator that the CLI spawned holds the socket path; the socket unit would
    replace the path under it and two coordinators would share one state. Ask it to exit
    (TERM is safe: jobs live in their supervisors) and wait until its lock is free."""
    import fcntl

    paths = get_paths()
    try:
        fd = os.open(paths.pid_file, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return None  # nobody holds it: no coordinator runs
        except OSError:
            pass
        try:
            pid = int(os.read(fd, 64).split()[0])
        except (ValueError, IndexError):
            return None
        try:
            os.kill(pid, 15)
        except OSError:
            return None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                if not quiet:
                    click.echo(f"qex: stopped the coordinator that the CLI had started "
                               f"(pid {pid}); its jobs keep running")
                return pid
            except OSError:
                time.sleep(0.05)
        die(f"the running coordinator (pid {pid}) did not exit within 10s; stop it and run "
            "`qex systemd install` again", 1)
    finally:
        os.close(fd)


# -- the commands -------------------------------------------------------------------------------


@click.group("systemd")
def command() -> None:
    """Install, remove or inspect the socket-activated systemd user units of qex."""


@command.command("install")
@click.option("--dry-run", is_flag=True, help="Print the units and the steps; change nothing.")
def install(*, dry_run: bool) -> None:
    """Write qex.socket and qex.service for this user, reload the user manager and start the
    socket, so the first qex command starts the coordinator through systemd."""
    units = rendered_units()
    target = unit_dir()
    if dry_run:
        for name, text in units.items():
            click.echo(f"# {target / name}")
            click.echo(text)
        click.echo("# then: systemctl --user daemon-reload && "
                   f"systemctl --user enable --now {SOCKET_UNIT}")
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
    """Say whether the units are installed and current, whether the socket listens, and
    whether the user manager keeps running after logout (linger)."""
    target = unit_dir()
    wanted = rendered_units()
    files: dict[str, Any] = {}
    for name, text in wanted.items():
        path = target / name
        try:
            current = path.read_text()
        except OSError:
            files[name] = {"path": str(path), "installed": False, "current": False}
            continue
        files[name] = {"path": str(path), "installed": True, "current": current == text}
    reachable = _manager_reachable()
    units: dict[str, str] = {}
    if reachable is None:
        units = {
            "socket_enabled": _state("is-enabled", SOCKET_UNIT),
            "socket_active": _state("is-active", SOCKET_UNIT),
            "service_active": _state("is-active", SERVICE_UNIT),
        }
    data = {"unit_dir": str(target), "files": files, "user_manager": reachable or "reachable",
            "socket_path": str(get_paths().socket_path), "program": qex_program(),
            "linger": _linger_note() is None, **units}
    if as_json:
        print_json(data)
        return
    for name, info in files.items():
        if not info["installed"]:
            state = "not installed"
        elif info["current"]:
            state = "installed, current"
        else:
            state = "installed, OUT OF DATE (run `qex systemd install` again)"
        click.echo(f"{name:12} {state}: {info['path']}")
    if units:
        click.echo(f"{'socket':12} {units['socket_enabled']}, {units['socket_active']}: "
                   f"{data['socket_path']}")
        click.echo(f"{'coordinator':12} {units['service_active']}")
    else:
        click.echo(f"{'systemd':12} {reachable}")
    click.echo(f"{'linger':12} {'on' if data['linger'] else 'off (jobs stop at logout)'}")
