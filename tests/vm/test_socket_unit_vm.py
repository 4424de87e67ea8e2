"""The socket-activated user units in a real user manager: `qex systemd install` makes the
first command start the coordinator as qex.service, and `uninstall` gives the job of
starting it back to the CLI."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

from conftest import Guest, config_text


def systemctl(*args: str) -> str:
    proc = subprocess.run(["systemctl", "--user", *args], capture_output=True, text=True,
                          check=False)
    return proc.stdout.strip()


def cgroup_of(pid: int) -> str:
    return Path(f"/proc/{pid}/cgroup").read_text().strip()


def test_socket_unit_starts_the_coordinator_on_the_first_command(guest: Guest) -> None:
    # The user manager reads units from its own ~/.config/systemd/user, so this test uses the
    # default config directory (the guest is thrown away afterwards).
    guest.env["XDG_CONFIG_HOME"] = str(Path(guest.env["HOME"]) / ".config")
    guest.write_config(config_text("off"))
    socket_path = guest.state / "run" / "qex.sock"
    installed = guest.run("systemd", "install")
    try:
        assert installed.returncode == 0, installed.stderr
        assert "enabled and started qex.socket" in installed.stdout
        assert systemctl("is-active", "qex.socket") == "active"
        assert systemctl("is-active", "qex.service") != "active"
        mode = socket_path.stat().st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
        assert stat.S_IMODE(socket_path.parent.stat().st_mode) == 0o700

        pid = int(guest.info()["pid"])
        assert "/qex.service" in cgroup_of(pid), cgroup_of(pid)
        assert systemctl("is-active", "qex.service") == "active"
        assert systemctl("show", "qex.service", "-p", "MainPID", "--value") == str(pid)
        job = guest.submit("--wait", "--", "true")
        assert guest.record(job)["state"] == "completed"

        status = guest.run("systemd", "status", "--json", check=True).stdout
        assert '"socket_active": "active"' in status and '"current": true' in status
    finally:
        removed = guest.run("systemd", "uninstall")
        (Path(guest.env["XDG_CONFIG_HOME"]) / "qex.toml").unlink()
    assert removed.returncode == 0, removed.stderr
    assert systemctl("is-active", "qex.socket") != "active"
    assert not (Path(guest.env["HOME"]) / ".config/systemd/user/qex.socket").exists()
    # Without the units the CLI starts a coordinator itself again, outside qex.service.
    pid = int(guest.info()["pid"])
    assert "/qex.service" not in cgroup_of(pid)
