"""GPU discovery and `qex pool suggest`, against a fake sysfs tree (this machine has none)."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from qex.cli.commands.pool import PLACEHOLDER, command
from qex.platform.devices import DiscoveryError, discover, from_sysfs, from_udev, group_by_vendor

GIB = 1024**3


def pci(root: Path, address: str, cls: str, vendor: str, device: str,
        driver: str | None = None, vram: int | None = None) -> None:
    d = root / "bus" / "pci" / "devices" / address
    d.mkdir(parents=True)
    (d / "class").write_text(cls + "\n")
    (d / "vendor").write_text(vendor + "\n")
    (d / "device").write_text(device + "\n")
    if driver:
        target = root / "bus" / "pci" / "drivers" / driver
        target.mkdir(parents=True, exist_ok=True)
        os.symlink(target, d / "driver")
    if vram is not None:
        (d / "mem_info_vram_total").write_text(f"{vram}\n")


@pytest.fixture
def sysfs(tmp_path: Path) -> Path:
    root = tmp_path / "sys"
    pci(root, "0000:00:00.0", "0x060000", "0x8086", "0x1237")               # host bridge
    pci(root, "0000:02:00.0", "0x030000", "0x1a03", "0x2000", "ast")        # BMC VGA
    pci(root, "0000:41:00.0", "0x030200", "0x10de", "0x20b5", "nvidia")     # A100, 3D class
    pci(root, "0000:01:00.0", "0x030000", "0x10de", "0x2204", "nvidia")     # RTX 3090
    return root


def test_sysfs_finds_display_devices_in_bus_order(sysfs: Path) -> None:
    found = from_sysfs(sysfs)
    assert [d.address for d in found] == ["0000:01:00.0", "0000:02:00.0", "0000:41:00.0"]
    groups, skipped = group_by_vendor(found)
    assert list(groups) == ["nvidia"] and [d.address for d in groups["nvidia"]] == [
        "0000:01:00.0", "0000:41:00.0"]
    assert [d.vendor_id for d in skipped] == ["1a03"]
    first = groups["nvidia"][0]
    assert first.driver == "nvidia" and first.env == "CUDA_VISIBLE_DEVICES"


def test_suggest_prints_a_pool_with_placeholders_for_unknown_vram(sysfs: Path) -> None:
    result = CliRunner().invoke(command, ["suggest", "--sysfs", str(sysfs), "--from", "sysfs"])
    assert result.exit_code == 0, result.output
    text = result.output
    assert "Skipped 0000:02:00.0" in text and "CUDA_DEVICE_ORDER=PCI_BUS_ID" in text
    assert "gpu[1] = 0000:41:00.0 NVIDIA 10de:20b5" in text
    data = tomllib.loads(text)
    assert data["pool"] == [{"name": "gpu", "size": "vram", "devices": [PLACEHOLDER, PLACEHOLDER],
                             "env": "CUDA_VISIBLE_DEVICES"}]


def test_suggest_reads_vram_and_splits_vendors(tmp_path: Path) -> None:
    root = tmp_path / "sys"
    pci(root, "0000:03:00.0", "0x030000", "0x1002", "0x744c", "amdgpu", vram=24 * GIB)
    pci(root, "0000:04:00.0", "0x038000", "0x1002", "0x744c", "amdgpu", vram=24 * GIB)
    pci(root, "0000:00:02.0", "0x030000", "0x8086", "0x4680", "i915")
    result = CliRunner().invoke(command, ["suggest", "--sysfs", str(root), "--name", "card"])
    assert result.exit_code == 0, result.output
    data = tomllib.loads(result.output)
    pools = {p["name"]: p for p in data["pool"]}
    assert pools["card-amd"]["devices"] == ["24GB", "24GB"]
    assert pools["card-amd"]["env"] == "HIP_VISIBLE_DEVICES"
    assert pools["card-intel"]["devices"] == [PLACEHOLDER]
    assert "integrated graphics" in result.output


def test_suggest_without_gpus_fails_clearly(tmp_path: Path) -> None:
    root = tmp_path / "sys"
    pci(root, "0000:02:00.0", "0x030000", "0x1a03", "0x2000", "ast")
    result = CliRunner().invoke(command, ["suggest", "--sysfs", str(root), "--from", "sysfs"])
    assert result.exit_code == 1
    assert "found no GPU" in result.output


def test_suggest_json(sysfs: Path) -> None:
    result = CliRunner().invoke(command, ["suggest", "--sysfs", str(sysfs), "--json"])
    data = json.loads(result.output)
    assert data["source"] == "sysfs" and len(data["devices"]) == 3
    assert data["devices"][2]["class"] == "0x030200" and data["devices"][1]["vendor"] is None


def test_bad_pool_name_is_a_usage_error(sysfs: Path) -> None:
    result = CliRunner().invoke(command, ["suggest", "--sysfs", str(sysfs), "--name", "a b"])
    assert result.exit_code == 2 and "pool name" in result.output


def test_udev_missing_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "pyudev", None)  # import fails as if not installed
    with pytest.raises(DiscoveryError, match=r"qex-queue\[udev\]"):
        from_udev()
    result = CliRunner().invoke(command, ["suggest", "--from", "udev"])
    assert result.exit_code == 1 and "pip install" in result.output
    # auto quietly uses sysfs instead, even for the real /sys.
    pci(tmp_path / "sys", "0000:01:00.0", "0x030000", "0x10de", "0x2204")
    assert discover("auto", tmp_path / "sys")[1] == "sysfs"
    assert discover("auto")[1] == "sysfs"


def test_missing_sysfs(tmp_path: Path) -> None:
    with pytest.raises(DiscoveryError, match="sysfs"):
        from_sysfs(tmp_path / "nothing")
