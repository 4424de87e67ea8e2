"""What the machine has: cores, memory, the memory a new program can use, and pressure.

Linux reads /proc (cheap, no imports); the portable implementation (macOS,
`QEX_PLATFORM=portable`) asks psutil, imported only there, and has no pressure figure.
"""

from __future__ import annotations

import os

from qex.core.config import Machine
from qex.platform import host


def cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _meminfo(field: str) -> int | None:
    """One field of /proc/meminfo in bytes. The file is read up to that line (MemTotal and
    MemAvailable are its first and third), since a pass with queued jobs reads it each time."""
    prefix = field + ":"
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith(prefix):
                    parts = line[len(prefix):].split()
                    return int(parts[0]) * (1024 if len(parts) > 1 else 1) if parts else None
    except (OSError, ValueError):
        pass
    return None


def mem_total() -> int:
    if host.linux():
        total = _meminfo("MemTotal")
        if total:
            return total
    import psutil

    return int(psutil.virtual_memory().total)


def mem_available() -> int | None:
    """Linux MemAvailable (counts reclaimable cache, not swap); on macOS the free, inactive,
    purgeable and speculative pages."""
    if host.linux():
        return _meminfo("MemAvailable")
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:
        return None


def memory_pressure(path: str = "/proc/pressure/memory") -> float | None:
    """PSI `some avg10` in percent, or None where the kernel gives none (macOS, portable)."""
    if not host.linux():
        return None
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith("some"):
                    for part in line.split():
                        if part.startswith("avg10="):
                            return float(part[6:])
    except (OSError, ValueError):
        return None
    return None


def machine() -> Machine:
    return Machine(cores=cores(), mem_total=mem_total())
