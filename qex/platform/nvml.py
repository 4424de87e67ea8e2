"""NVIDIA GPUs as NVML reports them now: name, VRAM in use, how busy.

Apart from the PCI discovery (`qex.platform.devices`) because `qex info` and `qex top` read
it on every call: this module imports neither `pathlib` nor anything else that a lean
command does not already have. NVML comes from nvidia-ml-py (the `qex-queue[nvidia]` extra,
module `pynvml`); without it, or without a driver that answers, there is nothing to report.
"""

from __future__ import annotations

from qex.core.model import dataclass


@dataclass(frozen=True)
class NvmlGpu:
    """One NVIDIA GPU as NVML reports it at this moment."""

    index: int                   # NVML's index (PCI bus order on every current driver)
    address: str                 # PCI bus address in sysfs form, e.g. 0000:01:00.0
    name: str
    uuid: str
    vram_total: int              # bytes
    vram_used: int               # bytes, by every process on the card
    utilization: int | None      # percent of time a kernel ran, None when not reported


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def sysfs_address(bus_id: str) -> str:
    """NVML's `00000000:01:00.0` as sysfs writes it: `0000:01:00.0`."""
    domain, sep, rest = bus_id.strip().lower().partition(":")
    if not sep:
        return bus_id.strip().lower()
    try:
        return f"{int(domain, 16):04x}:{rest}"
    except ValueError:
        return bus_id.strip().lower()


def nvml_gpus() -> list[NvmlGpu] | None:
    """Every NVIDIA GPU through NVML, or None when NVML cannot answer here (nvidia-ml-py not
    installed, no driver, no permission): callers then use what sysfs says."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # NVMLError_LibraryNotFound, _DriverNotLoaded, ...: no NVML here
        return None
    try:
        found: list[NvmlGpu] = []
        for index in range(int(pynvml.nvmlDeviceGetCount())):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
            try:
                utilization: int | None = int(
                    pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
            except Exception:  # not supported on this card (NVMLError_NotSupported)
                utilization = None
            found.append(NvmlGpu(
                index=index,
                address=sysfs_address(_text(pynvml.nvmlDeviceGetPciInfo(handle).busId)),
                name=_text(pynvml.nvmlDeviceGetName(handle)),
                uuid=_text(pynvml.nvmlDeviceGetUUID(handle)),
                vram_total=int(memory.total), vram_used=int(memory.used),
                utilization=utilization,
            ))
        return found
    except Exception:  # a card that stops answering half-way: no partial, wrong answer
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def gpu_use_lines(gpus: list[NvmlGpu]) -> list[str]:
    """One line per GPU for `qex info` and `qex top`: its live VRAM and how busy it is."""
    from qex.core.unit_text import format_size

    lines = []
    for gpu in gpus:
        busy = f", {gpu.utilization}% busy" if gpu.utilization is not None else ""
        lines.append(f"gpu {gpu.index} ({gpu.address}, {gpu.name}): "
                     f"{format_size(gpu.vram_used)} of {format_size(gpu.vram_total)} VRAM "
                     f"in use{busy}")
    return lines
