"""GPU discovery for `qex pool suggest` and `qex config init`: which display-class PCI
devices are compute GPUs, in PCI bus order, with their VRAM where the kernel or NVML tells it.

NVIDIA cards report no VRAM in sysfs. When nvidia-ml-py (the `qex-queue[nvidia]` extra,
module `pynvml`) is installed and the driver answers, NVML gives their names and VRAM
(`qex.platform.nvml`, which `qex info` and `qex top` read for the live use); otherwise the
sysfs answer stands.

Two sources give the same answer: pyudev (the optional `qex[udev]` extra, imported only
when asked for) and plain sysfs (/sys/bus/pci/devices/*), which needs nothing and is what
udev itself reads. Vendors qex knows how to hand a device to (NVIDIA, AMD, Intel) become
GPUs; any other display controller, such as the ASPEED VGA chip of a server's BMC, is
listed as skipped so the user sees why it is missing.
"""

from __future__ import annotations

import os
from pathlib import Path

from qex.core.model import dataclass

#: PCI vendor id -> (short name, the variable that selects devices for that vendor's runtime)
VENDORS: dict[str, tuple[str, str]] = {
    "10de": ("nvidia", "CUDA_VISIBLE_DEVICES"),
    "1002": ("amd", "HIP_VISIBLE_DEVICES"),
    "8086": ("intel", "ZE_AFFINITY_MASK"),
}
DISPLAY_CLASS = 0x03  # PCI base class "display controller" (VGA 0x0300, 3D 0x0302, ...)


class DiscoveryError(RuntimeError):
    """Discovery could not run (pyudev missing, no sysfs); the message says what to do."""


@dataclass(frozen=True)
class PciDisplay:
    address: str                 # PCI bus address, e.g. 0000:01:00.0
    vendor_id: str               # lower-case hex without 0x, e.g. 10de
    device_id: str
    pci_class: int               # e.g. 0x030200
    driver: str | None = None
    vram: int | None = None      # bytes, from mem_info_vram_total (amdgpu, xe) or NVML
    name: str | None = None      # the product name, from NVML

    @property
    def vendor(self) -> str | None:
        known = VENDORS.get(self.vendor_id)
        return known[0] if known else None

    @property
    def env(self) -> str | None:
        known = VENDORS.get(self.vendor_id)
        return known[1] if known else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _hex(text: str | None) -> str:
    value = (text or "").strip().lower()
    return value[2:] if value.startswith("0x") else value


def _vram(device_dir: Path) -> int | None:
    text = _read(device_dir / "mem_info_vram_total")
    if text and text.isdigit() and int(text) > 0:
        return int(text)
    return None


def from_sysfs(sys_root: Path = Path("/sys")) -> list[PciDisplay]:
    """Display-class PCI devices read from sysfs, in bus-address order."""
    base = sys_root / "bus" / "pci" / "devices"
    try:
        entries = sorted(base.iterdir(), key=lambda p: p.name)
    except OSError as exc:
        message = f"cannot list {base} ({exc.strerror}); this needs Linux sysfs"
        raise DiscoveryError(message) from None
    found: list[PciDisplay] = []
    for device in entries:
        try:
            pci_class = int(_read(device / "class") or "0", 16)
        except ValueError:
            continue
        if pci_class >> 16 != DISPLAY_CLASS:
            continue
        driver_link = device / "driver"
        driver = os.path.basename(os.readlink(driver_link)) if driver_link.is_symlink() else None
        found.append(PciDisplay(
            address=device.name, vendor_id=_hex(_read(device / "vendor")),
            device_id=_hex(_read(device / "device")), pci_class=pci_class, driver=driver,
            vram=_vram(device),
        ))
    return found


def from_udev() -> list[PciDisplay]:
    """The same through pyudev (its database, when udevd runs, adds nothing we need yet)."""
    try:
        import pyudev
    except ImportError:
        raise DiscoveryError("pyudev is not installed; run `pip install 'qex-queue[udev]'`, or use "
                             "`--from sysfs`, which needs nothing") from None
    found: list[PciDisplay] = []
    for device in pyudev.Context().list_devices(subsystem="pci"):
        props = device.properties
        try:
            pci_class = int(props.get("PCI_CLASS", "0"), 16)
        except ValueError:
            continue
        if pci_class >> 16 != DISPLAY_CLASS:
            continue
        vendor, _, model = str(props.get("PCI_ID", ":")).partition(":")
        found.append(PciDisplay(
            address=str(device.sys_name), vendor_id=vendor.lower(), device_id=model.lower(),
            pci_class=pci_class, driver=device.driver, vram=_vram(Path(device.sys_path)),
        ))
    return sorted(found, key=lambda d: d.address)


def with_nvml(devices: list[PciDisplay]) -> tuple[list[PciDisplay], bool]:
    """The devices with name and VRAM from NVML for the NVIDIA cards it knows; and whether
    NVML added anything."""
    if not any(d.vendor == "nvidia" for d in devices):
        return devices, False
    from qex.platform.nvml import nvml_gpus

    gpus = nvml_gpus()
    if not gpus:
        return devices, False
    by_address = {g.address: g for g in gpus}
    result: list[PciDisplay] = []
    added = False
    for device in devices:
        gpu = by_address.get(device.address.lower()) if device.vendor == "nvidia" else None
        if gpu is None:
            result.append(device)
            continue
        added = True
        result.append(PciDisplay(
            address=device.address, vendor_id=device.vendor_id, device_id=device.device_id,
            pci_class=device.pci_class, driver=device.driver,
            vram=device.vram or gpu.vram_total, name=gpu.name,
        ))
    return result, added


def discover(source: str = "auto", sys_root: Path = Path("/sys")) -> tuple[list[PciDisplay], str]:
    """(display devices, the source used). `auto` takes pyudev when it is installed. NVIDIA
    cards get their name and VRAM from NVML when nvidia-ml-py can reach the driver."""
    devices, used = _discover(source, sys_root)
    devices, added = with_nvml(devices)
    return devices, f"{used} and NVML" if added else used


def _discover(source: str, sys_root: Path) -> tuple[list[PciDisplay], str]:
    """Discovery without NVML. The portable implementation (macOS, `QEX_PLATFORM=portable`)
    has no PCI view to read; a copy of a sysfs tree named with `--sysfs` is still read."""
    from qex.platform import host

    if not host.linux() and sys_root == Path("/sys"):
        raise DiscoveryError(
            f"{host.describe(host.system_name())}, so qex cannot find GPUs itself (that "
            "reads Linux sysfs or udev); write the [[pool]] by hand: `count` GPUs are "
            "handed out by number as on Linux")
    if source == "udev":
        return from_udev(), "udev"
    if source == "auto":
        try:
            import pyudev  # noqa: F401
        except ImportError:
            return from_sysfs(sys_root), "sysfs"
        if sys_root == Path("/sys"):
            return from_udev(), "udev"
    return from_sysfs(sys_root), "sysfs"


def group_by_vendor(
    devices: list[PciDisplay],
) -> tuple[dict[str, list[PciDisplay]], list[PciDisplay]]:
    """({vendor: its GPUs in bus order}, the display devices that are not compute GPUs)."""
    groups: dict[str, list[PciDisplay]] = {}
    skipped: list[PciDisplay] = []
    for device in devices:
        if device.vendor is None:
            skipped.append(device)
        else:
            groups.setdefault(device.vendor, []).append(device)
    return groups, skipped
