"""Fakes of the kernel's cgroupfs and of the systemd user manager, for unit tests.

They model the rules that qex's enforcement depends on, so a test can fail for the same
reasons the kernel would make it fail:

* a new cgroup shows the interface files of the controllers its parent enables for it;
* `cgroup.subtree_control` refuses a controller the cgroup does not have, and refuses any
  controller while the cgroup itself holds processes (the no-internal-process rule, EBUSY);
* writing a pid to `cgroup.procs` moves it out of every other cgroup;
* a limit file takes a number or `max`; numbers are rounded down to whole pages.
"""

from __future__ import annotations

import errno
from pathlib import Path

from qex.core.model import dataclass, field
from qex.platform.cgroup import CgroupError, CgroupFS, join
from qex.platform.scope import ScopeError, ScopeRequest

PAGE = 4096
_CORE_FILES = ("cgroup.procs", "cgroup.controllers", "cgroup.subtree_control", "cgroup.events",
               "cgroup.kill", "cpu.pressure", "io.pressure")
_MEMORY_FILES = {
    "memory.max": "max\n", "memory.high": "max\n", "memory.low": "0\n", "memory.min": "0\n",
    "memory.swap.max": "max\n", "memory.oom.group": "0\n", "memory.current": "0\n",
    "memory.peak": "0\n", "memory.pressure": (
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"),
    "memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n",
}
_PIDS_FILES = {"pids.max": "max\n", "pids.current": "0\n"}
_LIMIT_FILES = ("memory.max", "memory.high", "memory.low", "memory.min", "memory.swap.max")


class FakeCgroupFS(CgroupFS):
    """A cgroupfs in a temp directory that behaves like the kernel's where qex cares."""

    def make(self, cgroup: str, controllers: tuple[str, ...] = ("cpu", "memory", "pids"),
             procs: tuple[int, ...] = ()) -> None:
        """Create a cgroup (and its parents) with the given controllers available."""
        path = self.host_path(cgroup)
        path.mkdir(parents=True, exist_ok=True)
        for ancestor in [path, *path.parents]:
            if ancestor == self.root.parent or not ancestor.is_relative_to(self.root):
                break
            if not (ancestor / "cgroup.procs").exists() or ancestor == path:
                self._populate(ancestor, controllers)
        if procs:
            (path / "cgroup.procs").write_text("".join(f"{p}\n" for p in procs))

    def _populate(self, path: Path, controllers: tuple[str, ...] | frozenset[str]) -> None:
        for name in _CORE_FILES:
            target = path / name
            if not target.exists():
                target.write_text("")
        (path / "cgroup.controllers").write_text(" ".join(sorted(controllers)) + "\n")
        (path / "cgroup.events").write_text("populated 0\nfrozen 0\n")
        extra: dict[str, str] = {}
        if "memory" in controllers:
            extra.update(_MEMORY_FILES)
        if "pids" in controllers:
            extra.update(_PIDS_FILES)
        for name, text in extra.items():
            target = path / name
            if not target.exists():
                target.write_text(text)

    # -- kernel behaviour ------------------------------------------------------------------

    def mkdir(self, cgroup: str) -> None:
        path = self.host_path(cgroup)
        if path.exists():
            return
        parent = path.parent
        if not (parent / "cgroup.procs").exists():
            raise CgroupError(f"cannot create the cgroup {path}: No such file or directory",
                              errno.ENOENT)
        path.mkdir()
        enabled = frozenset((parent / "cgroup.subtree_control").read_text().split())
        self._populate(path, enabled)

    def populated(self, cgroup: str) -> bool:
        path = self.host_path(cgroup)
        return any(procs.read_text().split() for procs in path.rglob("cgroup.procs"))

    def rmdir(self, cgroup: str) -> bool:
        path = self.host_path(cgroup)
        if not path.is_dir() or self.procs(cgroup):
            return False
        children = [p for p in path.iterdir() if p.is_dir()]
        if children:
            return False
        for item in path.iterdir():
            item.unlink()
        path.rmdir()
        return True

    def write(self, cgroup: str, name: str, value: str) -> None:
        path = self.host_path(cgroup, name)
        if not path.exists():
            raise CgroupError(f"cannot open {path}: No such file or directory", errno.ENOENT)
        if name == "cgroup.procs":
            self._move(cgroup, value.strip())
        elif name == "cgroup.subtree_control":
            self._subtree(cgroup, value)
        elif name == "cgroup.kill":
            (self.host_path(cgroup, "cgroup.procs")).write_text("")
        elif name in _LIMIT_FILES:
            word = value.strip()
            if word != "max":
                if not word.isdigit():
                    raise CgroupError(f"the kernel refused `{value}` in {path}: Invalid argument",
                                      errno.EINVAL)
                word = str(int(word) // PAGE * PAGE)
            path.write_text(word + "\n")
        else:
            path.write_text(value.strip() + "\n")

    def _move(self, cgroup: str, word: str) -> None:
        pid = word
        for procs in self.root.rglob("cgroup.procs"):
            lines = [line for line in procs.read_text().split() if line != pid]
            procs.write_text("".join(f"{line}\n" for line in lines))
        target = self.host_path(cgroup, "cgroup.procs")
        lines = target.read_text().split()
        target.write_text("".join(f"{line}\n" for line in [*lines, pid]))

    def _subtree(self, cgroup: str, value: str) -> None:
        path = self.host_path(cgroup, "cgroup.subtree_control")
        have = self.controllers(cgroup)
        enabled = set(self.subtree_control(cgroup))
        for token in value.split():
            name = token[1:]
            if token.startswith("+"):
                if name not in have:
                    raise CgroupError(f"the kernel refused `{value}` in {path}: No such file or "
                                      "directory", errno.ENOENT)
                if self.procs(cgroup) and cgroup.strip("/"):
                    raise CgroupError(f"the kernel refused `{value}` in {path}: Device or "
                                      "resource busy", errno.EBUSY)
                enabled.add(name)
            elif token.startswith("-"):
                enabled.discard(name)
        path.write_text(" ".join(sorted(enabled)) + "\n")

    # -- what a test makes the "kernel" do -------------------------------------------------

    def bump_event(self, cgroup: str, key: str, by: int = 1) -> None:
        path = self.host_path(cgroup, "memory.events")
        events = self.memory_events(cgroup) or {}
        events[key] = events.get(key, 0) + by
        path.write_text("".join(f"{k} {v}\n" for k, v in events.items()))

    def set_file(self, cgroup: str, name: str, text: str) -> None:
        self.host_path(cgroup, name).write_text(text)


@dataclass
class FakeScopeManager:
    """A user manager that makes scopes in a FakeCgroupFS (or only records the calls).

    `fail` makes every start raise ScopeError with that text; `misplace` pretends success
    without moving the pid (systemd issue 36781), so the caller's own check must catch it.
    """

    fs: FakeCgroupFS | None = None
    slice_parent: str = "/user.slice/user-1000.slice/user@1000.service"
    fail: str | None = None
    misplace: bool = False
    controllers: tuple[str, ...] = ("cpu", "memory", "pids")
    name: str = "fake"
    started: list[tuple[ScopeRequest, int]] = field(default_factory=list)
    where: dict[int, str] = field(default_factory=dict)

    def start(self, request: ScopeRequest, pid: int, timeout: float = 10.0) -> None:
        if self.fail:
            raise ScopeError(self.fail)
        self.started.append((request, pid))
        if self.misplace:
            return
        cgroup = join(join(self.slice_parent, request.slice), request.unit)
        self.where[pid] = cgroup
        if self.fs is not None:
            self.fs.make(cgroup, self.controllers)
            self.fs.move(cgroup, pid)

    def cgroup_of(self, pid: int) -> str | None:
        return self.where.get(pid, "/user.slice/user-1000.slice/session-1.scope")


def fake_tree(
    root: Path, uid: int = 1000, controllers: tuple[str, ...] = ("cpu", "memory", "pids")
) -> FakeCgroupFS:
    """A unified tree with a user manager that delegates `controllers`."""
    fs = FakeCgroupFS(root)
    fs.make("/", ("cpu", "io", "memory", "pids"))
    base = f"/user.slice/user-{uid}.slice/user@{uid}.service"
    fs.make(base, controllers)
    for part in ("/", "/user.slice", f"/user.slice/user-{uid}.slice"):
        fs.set_file(part, "cgroup.subtree_control", " ".join(controllers) + "\n")
    return fs
