"""cgroup v2 interface files, reached through one object rooted at the cgroup mount.

Every read and write that qex makes in cgroupfs goes through `CgroupFS`, so the enforcement
logic can run in unit tests against a temp directory (`qex.testing.fakes.FakeCgroupFS`)
instead of a kernel. A cgroup is named by its cgroup path, the form that `/proc/<pid>/cgroup`
prints (`/user.slice/.../qex-1a2b3c4d-1.scope`), never by a host path; the object maps it.

Writes open the file without O_CREAT: cgroupfs refuses to create files, so a missing
interface file (say `memory.swap.max` when swap accounting is off) is an error here too.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from qex.core.model import dataclass

CGROUP_MOUNT = Path("/sys/fs/cgroup")


class CgroupError(RuntimeError):
    """A cgroup operation failed; the message names the file and the kernel's answer."""

    def __init__(self, message: str, errno_value: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno_value


def parse_flat_keyed(text: str) -> dict[str, int]:
    """`key value` lines (memory.events, memory.stat, cgroup.events) as a dict of ints."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                values[parts[0]] = int(parts[1])
            except ValueError:
                continue
    return values


def parse_limit(text: str) -> int | None:
    """A limit file (`memory.max`, `memory.high`): bytes, or None for `max` (no limit)."""
    word = text.strip()
    if not word or word == "max":
        return None
    try:
        return int(word)
    except ValueError:
        return None


def parse_pressure(text: str) -> dict[str, float | int]:
    """PSI lines (`some avg10=0.00 avg60=0.00 avg300=0.00 total=0`) flattened.

    Keys are `some_avg10`, `some_avg60`, `some_avg300`, `some_total_us` and the same for
    `full`; averages are percentages, totals are microseconds of stall since creation.
    """
    values: dict[str, float | int] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts or parts[0] not in ("some", "full"):
            continue
        kind = parts[0]
        for item in parts[1:]:
            name, _, raw = item.partition("=")
            try:
                if name == "total":
                    values[f"{kind}_total_us"] = int(raw)
                elif name.startswith("avg"):
                    values[f"{kind}_{name}"] = float(raw)
            except ValueError:
                continue
    return values


def unified_path(cgroup_file_text: str) -> str | None:
    """The cgroup v2 path from the text of /proc/<pid>/cgroup (its `0::` line)."""
    for line in cgroup_file_text.splitlines():
        if line.startswith("0::"):
            return line[3:].strip() or "/"
    return None


def cgroup_of(pid: int | str = "self", proc_root: Path = Path("/proc")) -> str | None:
    """The cgroup v2 path of a process, or None when it is gone or has no v2 membership."""
    try:
        text = (proc_root / str(pid) / "cgroup").read_text()
    except OSError:
        return None
    return unified_path(text)


def join(parent: str, child: str) -> str:
    """A child cgroup path; `join("/a.scope", "job-1")` is `/a.scope/job-1`."""
    return parent.rstrip("/") + "/" + child


@dataclass
class CgroupFS:
    """cgroupfs at `root` (the real one at /sys/fs/cgroup, a temp tree in tests)."""

    root: Path = CGROUP_MOUNT

    def host_path(self, cgroup: str, name: str | None = None) -> Path:
        path = self.root / cgroup.strip("/") if cgroup.strip("/") else self.root
        return path / name if name else path

    # -- reading ---------------------------------------------------------------------------

    def read(self, cgroup: str, name: str) -> str | None:
        """The content of one interface file, or None when the file does not exist."""
        try:
            return self.host_path(cgroup, name).read_text()
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in (errno.ENODEV, errno.ENOTSUP, errno.EOPNOTSUPP):
                return None
            raise CgroupError(
                f"cannot read {self.host_path(cgroup, name)}: {exc.strerror}", exc.errno
            ) from None

    def exists(self, cgroup: str) -> bool:
        return self.host_path(cgroup).is_dir()

    def controllers(self, cgroup: str) -> frozenset[str]:
        """Controllers this cgroup may use (`cgroup.controllers`)."""
        return frozenset((self.read(cgroup, "cgroup.controllers") or "").split())

    def subtree_control(self, cgroup: str) -> frozenset[str]:
        return frozenset((self.read(cgroup, "cgroup.subtree_control") or "").split())

    def procs(self, cgroup: str) -> list[int]:
        text = self.read(cgroup, "cgroup.procs") or ""
        return [int(word) for word in text.split() if word.isdigit()]

    def populated(self, cgroup: str) -> bool:
        events = parse_flat_keyed(self.read(cgroup, "cgroup.events") or "")
        if "populated" in events:
            return events["populated"] == 1
        return bool(self.procs(cgroup))

    def memory_events(self, cgroup: str) -> dict[str, int] | None:
        text = self.read(cgroup, "memory.events")
        return None if text is None else parse_flat_keyed(text)

    def limit(self, cgroup: str, name: str) -> int | None:
        """A limit file as bytes; None for `max` or a missing file."""
        text = self.read(cgroup, name)
        return None if text is None else parse_limit(text)

    def counter(self, cgroup: str, name: str) -> int | None:
        """A single-number file such as `memory.peak` or `memory.current`."""
        text = self.read(cgroup, name)
        if text is None:
            return None
        try:
            return int(text.strip())
        except ValueError:
            return None

    def pressure(self, cgroup: str, resource: str = "memory") -> dict[str, float | int] | None:
        text = self.read(cgroup, f"{resource}.pressure")
        return None if text is None else parse_pressure(text)

    # -- changing --------------------------------------------------------------------------

    def write(self, cgroup: str, name: str, value: str) -> None:
        """Write one interface file; CgroupError names the file, the value and the reason."""
        path = self.host_path(cgroup, name)
        data = value.encode("ascii")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise CgroupError(f"cannot open {path}: {exc.strerror}", exc.errno) from None
        try:
            os.write(fd, data)
        except OSError as exc:
            raise CgroupError(
                f"the kernel refused `{value}` in {path}: {exc.strerror}", exc.errno
            ) from None
        finally:
            os.close(fd)

    def mkdir(self, cgroup: str) -> None:
        """Create a child cgroup; an existing one is fine (a leaf is reused only when empty)."""
        path = self.host_path(cgroup)
        try:
            os.mkdir(path, 0o755)
        except FileExistsError:
            return
        except OSError as exc:
            message = f"cannot create the cgroup {path}: {exc.strerror}"
            raise CgroupError(message, exc.errno) from None

    def rmdir(self, cgroup: str) -> bool:
        """Remove an empty cgroup; False when it still holds processes or is gone."""
        try:
            os.rmdir(self.host_path(cgroup))
            return True
        except OSError:
            return False

    def move(self, cgroup: str, pid: int) -> None:
        """Move a whole process (every thread) into `cgroup`."""
        self.write(cgroup, "cgroup.procs", str(pid))

    def enable(self, cgroup: str, controllers: list[str]) -> None:
        """Let the children of `cgroup` use these controllers (cgroup.subtree_control)."""
        if controllers:
            self.write(cgroup, "cgroup.subtree_control", " ".join(f"+{c}" for c in controllers))

    def kill(self, cgroup: str) -> bool:
        """SIGKILL every process in the cgroup (`cgroup.kill`, Linux 5.14); False if absent."""
        if not self.host_path(cgroup, "cgroup.kill").exists():
            return False
        try:
            self.write(cgroup, "cgroup.kill", "1")
            return True
        except CgroupError:
            return False

    def procs_file(self, cgroup: str) -> bytes:
        """The host path of `cgroup.procs` as bytes, for a forked child that may not allocate."""
        return os.fsencode(self.host_path(cgroup, "cgroup.procs"))
