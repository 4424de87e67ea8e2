"""detect(): each failure in its order, with its reason and its fix, against fake trees."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from qex.platform.detect import Capabilities, Probe, detect, enforcement_summary, probe, reset_cache

UNIFIED = "30 23 0:26 / /sys/fs/cgroup rw,nosuid,relatime shared:4 - cgroup2 cgroup2 rw\n"
HYBRID = (
    "30 23 0:26 / /sys/fs/cgroup ro,nosuid shared:4 - tmpfs tmpfs ro,mode=755\n"
    "31 30 0:27 / /sys/fs/cgroup/unified rw shared:5 - cgroup2 cgroup2 rw\n"
    "32 30 0:28 / /sys/fs/cgroup/memory rw shared:6 - cgroup cgroup rw,memory\n"
)
LEGACY = (
    "30 23 0:26 / /sys/fs/cgroup ro shared:4 - tmpfs tmpfs ro,mode=755\n"
    "32 30 0:28 / /sys/fs/cgroup/memory rw shared:6 - cgroup cgroup rw,memory\n"
)
UID = 1000


def machine(tmp_path: Path, *, mountinfo: str = UNIFIED, delegated: str | None = "cpu memory pids",
            sockets: tuple[str, ...] = ("private", "bus"), env: dict[str, str] | None = None,
            pystemd: bool = True, systemd_run: bool = True, platform: str = "linux") -> Probe:
    cg = tmp_path / "sys" / "fs" / "cgroup"
    cg.mkdir(parents=True)
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "pressure").mkdir()
    (proc / "pressure" / "memory").write_text("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    (proc / "self" / "mountinfo").write_text(mountinfo.replace("/sys/fs/cgroup", str(cg)))
    if "cgroup2 cgroup2" in mountinfo and " /sys/fs/cgroup " in mountinfo:
        (cg / "cgroup.controllers").write_text("cpu io memory pids\n")
    if delegated is not None:
        user = cg / "user.slice" / f"user-{UID}.slice" / f"user@{UID}.service"
        user.mkdir(parents=True)
        (user / "cgroup.controllers").write_text(delegated + "\n")
    runtime = tmp_path / "run" / "user" / str(UID)
    answering = set()
    if "private" in sockets:
        answering.add(runtime / "systemd" / "private")
    if "bus" in sockets:
        answering.add(runtime / "bus")
    environment = {"XDG_RUNTIME_DIR": str(runtime)} if env is None else env
    connect: Callable[[Path], bool] = lambda path: path in answering  # noqa: E731
    return Probe(platform=platform, env=environment, cgroup_root=cg, proc_root=proc,
                 linger_dir=tmp_path / "linger", booted_marker=tmp_path / "booted", uid=UID,
                 which=lambda name: "/usr/bin/systemd-run" if systemd_run else None,
                 has_module=lambda name: pystemd, connect=connect)


def test_macos_is_process_groups_only(tmp_path: Path) -> None:
    caps = probe(machine(tmp_path, platform="darwin"))
    assert not caps.enforcement_possible and caps.os == "darwin"
    assert caps.reason is not None and "not Linux" in caps.reason
    assert caps.fix is not None


@pytest.mark.parametrize(("mountinfo", "word"), [(HYBRID, "hybrid"), (LEGACY, "legacy")])
def test_v1_hierarchies_name_the_boot_fix(tmp_path: Path, mountinfo: str, word: str) -> None:
    caps = probe(machine(tmp_path, mountinfo=mountinfo))
    assert not caps.enforcement_possible and not caps.cgroup_v2 and caps.cgroup_mode == word
    assert caps.reason is not None and word in caps.reason
    assert caps.fix is not None and "systemd.unified_cgroup_hierarchy=1" in caps.fix


def test_config_can_forbid_systemd(tmp_path: Path) -> None:
    caps = probe(machine(tmp_path), use_systemd=False)
    assert not caps.enforcement_possible and caps.cgroup_v2
    assert caps.reason is not None and "use_systemd = false" in caps.reason
    assert caps.fix is not None and "use_systemd = true" in caps.fix


def test_no_user_manager(tmp_path: Path) -> None:
    caps = probe(machine(tmp_path, sockets=()))
    assert not caps.enforcement_possible and not caps.systemd_user
    assert caps.reason is not None and "user manager" in caps.reason
    assert caps.fix is not None and "enable-linger" in caps.fix
    unset = probe(machine(tmp_path / "b", env={}))
    assert unset.reason is not None and "XDG_RUNTIME_DIR is not set" in unset.reason


def test_memory_not_delegated_points_at_the_drop_in(tmp_path: Path) -> None:
    caps = probe(machine(tmp_path, delegated="cpu pids"))
    assert not caps.enforcement_possible and caps.delegated == ("cpu", "pids")
    assert caps.reason is not None and f"user@{UID}.service" in caps.reason
    assert caps.fix is not None and "qex-delegate.conf" in caps.fix


def test_missing_user_cgroup(tmp_path: Path) -> None:
    caps = probe(machine(tmp_path, delegated=None))
    assert not caps.enforcement_possible and caps.reason is not None
    assert "missing" in caps.reason


def test_pystemd_preferred_when_bus_answers(tmp_path: Path) -> None:
    caps = probe(machine(tmp_path))
    assert caps.enforcement_possible and caps.reason is None and caps.fix is None
    assert caps.scope_backend == "pystemd" and caps.psi and caps.systemd_user
    assert caps.delegated == ("cpu", "memory", "pids")


def test_pystemd_needs_the_bus_socket(tmp_path: Path) -> None:
    caps = probe(machine(tmp_path, sockets=("private",)))
    assert caps.enforcement_possible and caps.scope_backend == "systemd-run"


def test_bus_address_from_the_environment(tmp_path: Path) -> None:
    where = machine(tmp_path, sockets=())
    bus = tmp_path / "elsewhere" / "bus"
    env = {"XDG_RUNTIME_DIR": str(tmp_path / "none"),
           "DBUS_SESSION_BUS_ADDRESS": f"unix:path={bus}"}
    caps = probe(Probe(**{**where.__dict__, "env": env, "connect": lambda p: p == bus}))
    assert caps.enforcement_possible and caps.scope_backend == "pystemd"


def test_no_backend_at_all(tmp_path: Path) -> None:
    caps = probe(machine(tmp_path, pystemd=False, systemd_run=False))
    assert not caps.enforcement_possible and caps.reason is not None
    assert "systemd-run" in caps.reason and "pystemd" in caps.reason


@pytest.mark.parametrize(("forced", "pystemd", "expected"), [
    ("systemd-run", True, "systemd-run"),
    ("pystemd", True, "pystemd"),
])
def test_backend_can_be_forced(tmp_path: Path, forced: str, pystemd: bool, expected: str) -> None:
    runtime = str(tmp_path / "run" / "user" / str(UID))
    caps = probe(machine(tmp_path, pystemd=pystemd,
                         env={"XDG_RUNTIME_DIR": runtime, "QEX_SCOPE_BACKEND": forced}))
    assert caps.enforcement_possible and caps.scope_backend == expected


def test_forcing_a_missing_backend_is_a_reason(tmp_path: Path) -> None:
    runtime = str(tmp_path / "run" / "user" / str(UID))
    caps = probe(machine(tmp_path, pystemd=False,
                         env={"XDG_RUNTIME_DIR": runtime, "QEX_SCOPE_BACKEND": "pystemd"}))
    assert not caps.enforcement_possible and caps.reason is not None
    assert "QEX_SCOPE_BACKEND" in caps.reason
    other = tmp_path / "b"
    bad = probe(machine(other, env={"XDG_RUNTIME_DIR": str(other / "run" / "user" / str(UID)),
                                    "QEX_SCOPE_BACKEND": "jeepney"}))
    assert bad.reason is not None and "jeepney" in bad.reason


def test_detect_is_cached_per_use_systemd(monkeypatch: pytest.MonkeyPatch) -> None:
    reset_cache()
    calls: list[bool] = []

    def fake_probe(where: Probe | None = None, *, use_systemd: bool = True) -> Capabilities:
        calls.append(use_systemd)
        return Capabilities(os="linux", reason=str(use_systemd))

    monkeypatch.setattr("qex.platform.detect.probe", fake_probe)
    assert detect().reason == "True" and detect().reason == "True"
    assert detect(False).reason == "False"
    assert calls == [True, False]
    reset_cache()


def test_summary_lines() -> None:
    good = Capabilities(os="linux", enforcement_possible=True, scope_backend="systemd-run")
    bad = Capabilities(os="linux", reason="cgroups are hybrid", fix="boot unified")
    assert enforcement_summary("off", bad).startswith("mode: off")
    assert "WOULD work" in enforcement_summary("off", good)
    assert "systemd-run" in enforcement_summary("hard", good)
    assert "2.5 times" in enforcement_summary("soft", good, mem_overcommit=2.5)
    line = enforcement_summary("soft", bad)
    assert line.startswith("mode: soft — NOT ACTIVE")
    assert "cgroups are hybrid" in line and "boot unified" in line


def test_one_enforcement_state_for_info_and_config() -> None:
    from qex.platform.detect import enforcement_state

    good = Capabilities(os="linux", enforcement_possible=True, scope_backend="pystemd")
    bad = Capabilities(os="linux", reason="cgroups are hybrid", fix="boot unified")
    assert enforcement_state("hard", good) == {
        "mode": "hard", "active": True, "possible": True, "reason": None, "fix": None,
        "backend": "pystemd"}
    off = enforcement_state("off", good)
    assert off["active"] is False and off["reason"] and off["fix"]
    assert enforcement_state("off", bad)["fix"] is None
    assert enforcement_state("soft", bad)["reason"] == "cgroups are hybrid"
    assert Capabilities(os="linux", delegated=("memory",)).to_dict()["delegated"] == ["memory"]
