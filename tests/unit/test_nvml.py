"""NVML (nvidia-ml-py's `pynvml`) against a fake module: names, VRAM and live use of NVIDIA
cards, the sysfs fallback when NVML cannot answer, and where the figures appear."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from qex.cli import info_core as info_cmd
from qex.cli.commands.pool import PLACEHOLDER
from qex.cli.commands.pool import command as pool_command
from qex.cli.top_page import page
from qex.platform.devices import discover
from qex.platform.nvml import gpu_use_lines, nvml_gpus, sysfs_address

GIB = 1024**3


class NVMLError(Exception):
    pass


class FakeNvml:
    """The part of pynvml that qex calls. Card 0 gives bytes (older bindings), card 1 str
    and no utilization."""

    def __init__(self, *, init_fails: bool = False) -> None:
        self.init_fails = init_fails
        self.shutdowns = 0
        self.cards = [
            {"bus": b"00000000:01:00.0", "name": b"NVIDIA GeForce RTX 3090", "total": 24 * GIB,
             "used": 3 * GIB, "util": 41, "uuid": b"GPU-aaaa"},
            {"bus": "00000000:41:00.0", "name": "NVIDIA A100-SXM4-80GB", "total": 80 * GIB,
             "used": 0, "util": None, "uuid": "GPU-bbbb"},
        ]

    def nvmlInit(self) -> None:
        if self.init_fails:
            raise NVMLError("Driver Not Loaded")

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        return len(self.cards)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> dict[str, Any]:
        return self.cards[index]

    def nvmlDeviceGetMemoryInfo(self, card: dict[str, Any]) -> Any:
        return SimpleNamespace(total=card["total"], used=card["used"],
                               free=card["total"] - card["used"])

    def nvmlDeviceGetPciInfo(self, card: dict[str, Any]) -> Any:
        return SimpleNamespace(busId=card["bus"])

    def nvmlDeviceGetName(self, card: dict[str, Any]) -> Any:
        return card["name"]

    def nvmlDeviceGetUUID(self, card: dict[str, Any]) -> Any:
        return card["uuid"]

    def nvmlDeviceGetUtilizationRates(self, card: dict[str, Any]) -> Any:
        if card["util"] is None:
            raise NVMLError("Not Supported")
        return SimpleNamespace(gpu=card["util"], memory=10)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeNvml:
    module = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", module)
    return module


@pytest.fixture
def sysfs(tmp_path: Path) -> Path:
    root = tmp_path / "sys"
    for address, cls, device in (("0000:01:00.0", "0x030000", "0x2204"),
                                 ("0000:41:00.0", "0x030200", "0x20b5")):
        d = root / "bus" / "pci" / "devices" / address
        d.mkdir(parents=True)
        (d / "class").write_text(cls + "\n")
        (d / "vendor").write_text("0x10de\n")
        (d / "device").write_text(device + "\n")
    return root


def test_nvml_reports_every_card(fake: FakeNvml) -> None:
    gpus = nvml_gpus()
    assert gpus is not None and [g.address for g in gpus] == ["0000:01:00.0", "0000:41:00.0"]
    first, second = gpus
    assert first.name == "NVIDIA GeForce RTX 3090" and first.uuid == "GPU-aaaa"
    assert (first.vram_total, first.vram_used, first.utilization) == (24 * GIB, 3 * GIB, 41)
    assert second.utilization is None and second.name == "NVIDIA A100-SXM4-80GB"
    assert fake.shutdowns == 1


def test_no_nvml_means_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails: not installed
    assert nvml_gpus() is None
    broken = FakeNvml(init_fails=True)
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    assert nvml_gpus() is None


def test_bus_ids_become_sysfs_addresses() -> None:
    assert sysfs_address("00000000:0A:00.0") == "0000:0a:00.0"
    assert sysfs_address("0001:3B:00.1") == "0001:3b:00.1"


def test_suggest_takes_the_vram_from_nvml(fake: FakeNvml, sysfs: Path) -> None:
    result = CliRunner().invoke(pool_command, ["suggest", "--sysfs", str(sysfs),
                                               "--from", "sysfs"])
    assert result.exit_code == 0, result.output
    assert PLACEHOLDER not in result.output
    assert '"24GB",\n    "80GB",' in result.output
    assert "through sysfs and NVML" in result.output
    assert "(NVIDIA A100-SXM4-80GB)" in result.output
    data = json.loads(CliRunner().invoke(pool_command, ["suggest", "--sysfs", str(sysfs),
                                                        "--from", "sysfs", "--json"]).output)
    assert [d["name"] for d in data["devices"]] == ["NVIDIA GeForce RTX 3090",
                                                     "NVIDIA A100-SXM4-80GB"]


def test_without_nvml_suggest_falls_back_to_sysfs(monkeypatch: pytest.MonkeyPatch,
                                                  sysfs: Path) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(init_fails=True))
    devices, used = discover("sysfs", sysfs)
    assert used == "sysfs" and all(d.vram is None and d.name is None for d in devices)
    result = CliRunner().invoke(pool_command, ["suggest", "--sysfs", str(sysfs),
                                               "--from", "sysfs"])
    assert PLACEHOLDER in result.output and "qex-queue[nvidia]" in result.output


def test_info_and_top_show_live_vram(fake: FakeNvml) -> None:
    lines = info_cmd.local_gpu_lines()
    assert lines == [
        "gpu 0 (0000:01:00.0, NVIDIA GeForce RTX 3090): 3GB of 24GB VRAM in use, 41% busy",
        "gpu 1 (0000:41:00.0, NVIDIA A100-SXM4-80GB): 0B of 80GB VRAM in use",
    ]
    assert gpu_use_lines([]) == []
    info = {"pid": 7, "version": "x", "cpu_claimed": 1, "cpu_budget": 2, "mem_claimed": 0,
            "mem_budget": GIB, "pools": [{"name": "gpu", "used": 1, "total": 2, "devices": [
                {"index": 0, "capacity": 24 * GIB, "used": 24 * GIB}]}]}
    text = page([], {}, info, None, now=0.0, extra=tuple(
        info_cmd.pool_lines(info["pools"]) + lines))
    assert "pool gpu: 1 of 2 in use" in text and lines[0] in text
