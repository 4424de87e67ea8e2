"""`qex systemd install|uninstall|status` and the unit templates, with systemctl recorded
instead of run (this machine has no user manager)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from qex.cli.commands import systemd as cmd
from qex.platform.detect import Probe
from qex.platform.user_units import (
    DATA_DIR,
    DROP_IN_TARGET,
    packaged,
    render,
    systemd_quote,
    template,
)

SOCKET_TEMPLATE = template("qex.socket")
SERVICE_TEMPLATE = template("qex.service")

CHECKOUT = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "QEX_PEERS_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path


@pytest.fixture
def systemctl(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    calls: list[tuple[str, ...]] = []

    def fake(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        calls.append(args)
        out = {"is-active": "inactive\n", "is-enabled": "enabled\n"}.get(args[0], "")
        if args[0] == "show":
            out = "/x/systemd/user /etc/systemd/user\n"
        return subprocess.CompletedProcess(["systemctl", *args], 0, out, "")

    monkeypatch.setattr(cmd, "systemctl", fake)
    monkeypatch.setattr(cmd, "_manager_reachable", lambda: None)
    monkeypatch.setattr(cmd, "_linger_note", lambda: None)
    monkeypatch.setattr(cmd, "packaged_units", lambda: [])
    return calls


def fake_machine(tmp_path: Path, *, linger: bool, controllers: str | None,
                 unified: bool = True) -> Probe:
    """A cgroup tree and a linger directory for the checklist."""
    uid = os.getuid()
    root = tmp_path / "cgroup"
    root.mkdir()
    if unified:
        (root / "cgroup.controllers").write_text("cpu io memory pids\n")
    if controllers is not None:
        user = root / "user.slice" / f"user-{uid}.slice" / f"user@{uid}.service"
        user.mkdir(parents=True)
        (user / "cgroup.controllers").write_text(controllers + "\n")
    linger_dir = tmp_path / "linger"
    linger_dir.mkdir()
    if linger:
        (linger_dir / cmd._user()).touch()
    return Probe(cgroup_root=root, proc_root=tmp_path / "noproc", linger_dir=linger_dir)


def test_the_units_and_the_drop_in_are_package_data_with_no_other_copy() -> None:
    import qex

    assert Path(qex.__file__).resolve().parent / "data" / "systemd" == DATA_DIR
    assert "Delegate=pids memory cpu io" in template("qex-delegate.conf")
    names = {"qex.socket", "qex.service", "qex-delegate.conf", "qex.user.socket",
             "qex.user.service"}
    skip = {".venv", ".git", ".pybuild", "debian", "build", "dist"}
    copies = [p.relative_to(CHECKOUT) for p in CHECKOUT.rglob("*")
              if p.name in names and p.is_file() and not skip & set(p.relative_to(CHECKOUT).parts)]
    assert sorted(copies) == sorted(Path("qex/data/systemd") / n for n in
                                    ("qex.socket", "qex.service", "qex-delegate.conf"))


def test_packaged_units_expand_home_and_run_usr_bin_qex() -> None:
    units = packaged()
    assert "ListenStream=%h/.local/state/qex/run/qex.sock\n" in units["qex.socket"]
    assert "ExecStart=/usr/bin/qex daemon --supervised\n" in units["qex.service"]
    assert "@" not in units["qex.service"].replace("user@", "")
    assert "Environment=" not in units["qex.service"]


def test_export_writes_the_packaged_units(tmp_path: Path) -> None:
    result = CliRunner().invoke(cmd.command, ["export", str(tmp_path / "u"),
                                              "--program", "/opt/q/bin/qex"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "u" / "qex.socket").read_text() == packaged("/opt/q/bin/qex")["qex.socket"]
    assert "ExecStart=/opt/q/bin/qex daemon" in (tmp_path / "u" / "qex.service").read_text()


def test_drop_in_prints_the_shipped_file() -> None:
    result = CliRunner().invoke(cmd.command, ["drop-in"])
    assert result.exit_code == 0
    assert result.output == template("qex-delegate.conf")


def test_templates_keep_the_promises() -> None:
    assert "SocketMode=0600" in SOCKET_TEMPLATE and "DirectoryMode=0700" in SOCKET_TEMPLATE
    assert "WantedBy=sockets.target" in SOCKET_TEMPLATE
    assert "KillMode=process" in SERVICE_TEMPLATE and "Type=notify" in SERVICE_TEMPLATE
    assert "[Install]" not in SERVICE_TEMPLATE  # started by the socket only


def test_render_quotes_for_systemd() -> None:
    assert systemd_quote("/usr/bin/qex") == "/usr/bin/qex"
    assert systemd_quote("/opt/my tools/qex") == '"/opt/my tools/qex"'
    assert systemd_quote("50%$HOME") == "50%%$$HOME"
    text = render(SERVICE_TEMPLATE, socket_path="/s", exec_start=["/a b/python", "-m", "qex"],
                  environment={"XDG_STATE_HOME": "/home/u/st ate"})
    assert 'ExecStart="/a b/python" -m qex daemon --supervised' in text
    assert 'Environment="XDG_STATE_HOME=/home/u/st ate"' in text
    bare = render(SERVICE_TEMPLATE, socket_path="/s", exec_start=["/q"], environment={})
    assert "@" not in bare.replace("user@", "")
    sock = render(SOCKET_TEMPLATE, socket_path="/run/100%/qex.sock", exec_start=[], environment={})
    assert "ListenStream=/run/100%%/qex.sock" in sock


def test_program_is_the_console_script_when_run_as_one(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    script = tmp_path / "bin" / "qex"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(script), "systemd", "install"])
    assert cmd.qex_program() == [str(script)]
    monkeypatch.setattr(sys, "argv", ["/x/qex/__main__.py"])
    assert cmd.qex_program() == [sys.executable, "-P", "-m", "qex"]


def test_install_writes_units_and_starts_the_socket(home: Path,
                                                    systemctl: list[tuple[str, ...]]) -> None:
    result = CliRunner().invoke(cmd.command, ["install"])
    assert result.exit_code == 0, result.output
    target = home / ".config" / "systemd" / "user"
    socket_text = (target / "qex.socket").read_text()
    service_text = (target / "qex.service").read_text()
    assert f"ListenStream={home}/state/qex/run/qex.sock" in socket_text
    assert f"Environment=XDG_STATE_HOME={home}/state" in service_text
    assert f"Environment=XDG_CONFIG_HOME={home}/.config" in service_text
    assert "@EXEC_START@" not in service_text and "@ENVIRONMENT@" not in service_text
    assert oct((target / "qex.service").stat().st_mode & 0o777) == "0o644"
    assert ("daemon-reload",) in systemctl and ("enable", "--now", "qex.socket") in systemctl
    assert systemctl.index(("daemon-reload",)) < systemctl.index(("enable", "--now", "qex.socket"))
    assert "enabled and started qex.socket" in result.output
    assert "not in the user manager's unit search path" in result.output  # /x/... above


def test_install_honours_xdg_config_home(home: Path, systemctl: list[tuple[str, ...]],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "cfg"))
    assert CliRunner().invoke(cmd.command, ["install"]).exit_code == 0
    assert (home / "cfg" / "systemd" / "user" / "qex.socket").exists()


def test_dry_run_changes_nothing(home: Path, systemctl: list[tuple[str, ...]]) -> None:
    result = CliRunner().invoke(cmd.command, ["install", "--dry-run", "--units"])
    assert result.exit_code == 0
    assert "[Socket]" in result.output and "KillMode=process" in result.output
    assert systemctl == [] and not (home / ".config" / "systemd").exists()


def test_dry_run_says_on_one_screen_what_an_admin_must_do(
        home: Path, systemctl: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch) -> None:
    where = fake_machine(home, linger=False, controllers="cpu memory pids")
    monkeypatch.setattr(cmd, "probe_where", lambda: where)
    result = CliRunner().invoke(cmd.command, ["install", "--dry-run"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert len(out.splitlines()) <= 24, out
    assert f"units go to  {home}/.config/systemd/user/" in out
    assert "linger       OFF" in out
    assert "delegated    memory yes, cpu yes, io NO" in out
    assert f"  loginctl enable-linger {cmd._user()}\n" in out
    assert "  qex systemd install\n" in out
    assert (f"  sudo install -D -m 0644 {DATA_DIR / 'qex-delegate.conf'} {DROP_IN_TARGET} && "
            "sudo systemctl daemon-reload\n") in out
    assert "delegate io to user@.service" in out
    assert systemctl == []


def test_status_with_nothing_missing_says_so(
        home: Path, systemctl: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch) -> None:
    where = fake_machine(home, linger=True, controllers="cpu io memory pids")
    monkeypatch.setattr(cmd, "probe_where", lambda: where)
    runner = CliRunner()
    assert runner.invoke(cmd.command, ["install"]).exit_code == 0
    out = runner.invoke(cmd.command, ["status"]).output
    assert "linger       on" in out and "memory yes, cpu yes, io yes" in out
    assert "to do:       nothing" in out
    data = json.loads(runner.invoke(cmd.command, ["status", "--json"]).output)
    assert data["todo"] == [] and data["controllers"] == {"memory": True, "cpu": True, "io": True}


def test_status_names_the_boot_fix_on_hybrid_cgroups_and_packaged_units(
        home: Path, systemctl: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch) -> None:
    where = fake_machine(home, linger=True, controllers=None, unified=False)
    monkeypatch.setattr(cmd, "probe_where", lambda: where)
    monkeypatch.setattr(cmd, "packaged_units", lambda: [Path("/usr/lib/systemd/user/qex.socket")])
    out = CliRunner().invoke(cmd.command, ["status"]).output
    assert "packaged     /usr/lib/systemd/user/qex.socket" in out
    assert "systemd.unified_cgroup_hierarchy=1" in out
    assert "qex systemd install" not in out.split("to do:")[1]  # the package did it


def test_install_without_a_user_manager_fails_clearly(home: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cmd, "_manager_reachable", lambda: "no systemd user manager answers")
    result = CliRunner().invoke(cmd.command, ["install"])
    assert result.exit_code == 1
    assert "no systemd user manager answers" in result.output and "--dry-run" in result.output
    assert not (home / ".config" / "systemd").exists()


def test_status_then_uninstall(home: Path, systemctl: list[tuple[str, ...]]) -> None:
    runner = CliRunner()
    assert runner.invoke(cmd.command, ["install"]).exit_code == 0
    data: dict[str, Any] = json.loads(runner.invoke(cmd.command, ["status", "--json"]).output)
    assert data["files"]["qex.socket"] == {
        "path": str(home / ".config/systemd/user/qex.socket"), "installed": True, "current": True}
    assert data["socket_enabled"] == "enabled"
    result = runner.invoke(cmd.command, ["uninstall"])
    assert result.exit_code == 0 and "removed" in result.output
    assert ("disable", "--now", "qex.socket") in systemctl and ("stop", "qex.service") in systemctl
    assert not (home / ".config/systemd/user/qex.socket").exists()
    again = runner.invoke(cmd.command, ["uninstall"])
    assert "nothing to remove" in again.output


def test_status_flags_out_of_date_units(home: Path, systemctl: list[tuple[str, ...]]) -> None:
    runner = CliRunner()
    runner.invoke(cmd.command, ["install"])
    path = home / ".config/systemd/user/qex.service"
    path.write_text(path.read_text().replace("ExecStart=", "ExecStart=/old/qex #"))
    assert "OUT OF DATE" in runner.invoke(cmd.command, ["status"]).output


def test_install_stops_a_coordinator_the_cli_started(home: Path,
                                                     systemctl: list[tuple[str, ...]]) -> None:
    # A stand-in coordinator: holds the pid-file lock until TERM, like the real one.
    pid_file = home / "state" / "qex" / "run" / "coordinator.pid"
    pid_file.parent.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(pid_file)!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "os.write(fd, f'{os.getpid()} x\\n'.encode())\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        result = CliRunner().invoke(cmd.command, ["install"])
        assert result.exit_code == 0, result.output
        assert f"(pid {holder.pid})" in result.output
        assert holder.wait(timeout=10) == -15
        fd = os.open(pid_file, os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # free now
        os.close(fd)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


def test_qex_modules_start_clear_of_the_working_directory(tmp_path: Path) -> None:
    """A `qex` package in the directory a process starts in is not the one it imports."""

    from qex.core.pyexec import module_argv, runs_module

    shadow = tmp_path / "qex"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise SystemExit('the shadow qex was imported')\n")
    (shadow / "__main__.py").write_text("raise SystemExit('the shadow qex ran')\n")
    argv = module_argv("qex", "version")
    assert runs_module(argv)
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "shadow" not in done.stdout + done.stderr
