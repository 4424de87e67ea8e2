"""One job's cgroup inside the supervisor's delegated systemd scope.

Layout, below `qex-<id8>-<n>.scope` (Delegate=yes, so the subtree is ours to manage):

    qex-1a2b3c4d-1.scope/
        supervisor/    the supervisor itself (cgroup v2 lets no process sit in a cgroup
                       whose controllers are enabled for its children)
        job-1/         the first attempt: limits, OOM counters, peak and PSI are its alone
        job-2/         a later attempt of the same supervisor (`--retries`)

A fresh leaf per attempt, rather than one `job/` leaf with counter deltas: `memory.peak`
cannot be reset on the kernels we target (before 6.12), so only a new leaf gives a true
per-attempt peak; the old leaf is removed once empty. Counters are still taken as deltas
from the leaf's creation, which costs nothing and keeps a reused name honest.

Limits (all on the job leaf, never on systemd's own scope files):

* hard: memory.max = claim, memory.swap.max = 0. Without the swap limit a job at its claim
  would page out instead of being stopped, and "hard" would not be a ceiling.
* soft: memory.high = claim (the kernel reclaims and slows the job above it), memory.max =
  claim x mem_overcommit (the OOM killer stops it there). Swap is left as the machine has
  it: swapping is how the kernel slows a job above memory.high instead of stopping it.
* both: memory.oom.group = 1, so an OOM kill takes the whole job tree, not one child.

`describe()` reports what the kernel shows after the writes, so the record never names a
limit that was not applied.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from qex.platform.cgroup import CgroupError, CgroupFS, cgroup_of, join
from qex.platform.sandbox import Evidence, Limits

if TYPE_CHECKING:
    from collections.abc import Callable

    from qex.core.records import Enforcement
    from qex.core.states import EnforceMode

SUPERVISOR_LEAF = "supervisor"


def settle(fs: CgroupFS, scope: str, unit: str, pid: int | None = None) -> None:
    """Move the supervisor (`pid`, this process by default) into the scope's `supervisor/`
    leaf and let the scope's children use memory, pids and, where delegated, cpu. None of it
    depends on the job, so a standby supervisor does it before its job comes; done again,
    it only checks. Raises CgroupError when the scope cannot give a memory limit."""
    available = fs.controllers(scope)
    if "memory" not in available:
        have = " ".join(sorted(available)) or "none"
        raise CgroupError(
            f"the scope {unit} was not given the memory controller (it has: {have})"
        )
    own = join(scope, SUPERVISOR_LEAF)
    fs.mkdir(own)
    if cgroup_of("self" if pid is None else pid) != own:
        # Not written when it is there already: the kernel treats every write to
        # `cgroup.procs` as a migration, even into the cgroup the process is in (35 ms after
        # a settled standby's go in the guest of tests/vm, against 4 ms without it).
        fs.move(own, os.getpid() if pid is None else pid)
    wanted = ["memory"] + (["pids"] if "pids" in available else [])
    missing = [c for c in wanted if c not in fs.subtree_control(scope)]
    fs.enable(scope, missing)
    if "cpu" in available and "cpu" not in fs.subtree_control(scope):
        try:
            fs.enable(scope, ["cpu"])
        except CgroupError:
            pass  # cpu is a nicety (weights, cpu.stat per leaf); memory is what counts


class CgroupSandbox:
    """The `Sandbox` for a supervisor that sits in a delegated qex scope."""

    backend = "systemd-scope"

    def __init__(self, fs: CgroupFS, scope: str, unit: str, mode: EnforceMode) -> None:
        self.fs = fs
        self.scope = scope
        self.unit = unit
        self.mode = mode
        self.active = True
        self.reason: str | None = None
        self._attempt = 0
        self._leaf: str | None = None
        self._shown_leaf: str | None = None
        self._procs_file: bytes | None = None
        self._baseline: dict[str, int] = {}
        self._applied: dict[str, int | None] = {}
        self._notes: list[str] = []

    # -- setting up ------------------------------------------------------------------------

    @classmethod
    def open(cls, fs: CgroupFS, scope: str, unit: str, mode: EnforceMode,
             pid: int | None = None) -> CgroupSandbox:
        """Move the supervisor into `supervisor/` and enable the controllers for children
        (`settle`).

        Raises CgroupError when the scope cannot give a job leaf with a memory limit.
        """
        settle(fs, scope, unit, pid)
        return cls(fs, scope, unit, mode)

    def _new_leaf(self) -> str:
        while True:
            self._attempt += 1
            leaf = join(self.scope, f"job-{self._attempt}")
            if not self.fs.exists(leaf):
                self.fs.mkdir(leaf)
                return leaf

    def _set(self, leaf: str, name: str, value: int | None, *, required: bool) -> int | None:
        """Write one limit and read back what the kernel kept (it rounds to pages)."""
        text = "max" if value is None else str(value)
        try:
            self.fs.write(leaf, name, text)
        except CgroupError as exc:
            if required:
                raise
            self._notes.append(f"{name} was not set ({exc})")
            return None
        return self.fs.limit(leaf, name)

    def begin_attempt(self, limits: Limits) -> None:
        """A fresh leaf with this attempt's limits. Never raises: a failure turns the sandbox
        inactive with the reason, and the job then runs where the supervisor is."""
        self._remove_leaf()
        self._notes = []
        self._applied = {}
        try:
            leaf = self._new_leaf()
            self._leaf = self._shown_leaf = leaf
            self._procs_file = self.fs.procs_file(leaf)
            try:
                self.fs.write(leaf, "memory.oom.group", "1")
            except CgroupError as exc:
                self._notes.append(f"memory.oom.group was not set ({exc})")
            if limits.mode in ("soft", "hard"):
                swap = limits.swap_max
                if limits.mode == "hard" and swap is None:
                    swap = 0
                if swap is not None:
                    self._applied["swap_max"] = self._set(leaf, "memory.swap.max", swap,
                                                          required=False)
                if limits.memory_high is not None:
                    self._applied["memory_high"] = self._set(leaf, "memory.high",
                                                             limits.memory_high, required=True)
                if limits.memory_max is not None:
                    self._applied["memory_max"] = self._set(leaf, "memory.max",
                                                            limits.memory_max, required=True)
            self._baseline = self.fs.memory_events(leaf) or {}
            self.active = True
            self.reason = None
        except CgroupError as exc:
            self.active = False
            self.reason = f"qex could not prepare the job's cgroup in {self.unit}: {exc}"
            self._remove_leaf()

    # -- the forked child ------------------------------------------------------------------

    def child_preexec(self) -> Callable[[], None] | None:
        """`preexec` while this attempt has a job leaf to join; None when it has none (the
        limits could not be applied), where `preexec` would do nothing."""
        if self._procs_file is None or not self.active:
            return None
        return self.preexec

    def preexec(self) -> None:
        """In the forked child, before exec: join the job leaf (raises, so the spawn fails,
        rather than letting the job run outside its cgroup)."""
        path = self._procs_file
        if path is None or not self.active:
            return
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)

    # -- afterwards ------------------------------------------------------------------------

    def evidence(self) -> Evidence:
        """OOM kills of this attempt (proven: they are counted in the job's own leaf), the
        leaf's peak and its memory pressure. Read after the job was reaped."""
        leaf = self._leaf
        if leaf is None or not self.active:
            return Evidence()
        try:
            events = self.fs.memory_events(leaf) or {}
            peak = self.fs.counter(leaf, "memory.peak")
            pressure = self.fs.pressure(leaf, "memory")
        except CgroupError:
            return Evidence(source="cgroup")

        def delta(key: str) -> int:
            return max(0, events.get(key, 0) - self._baseline.get(key, 0))

        kills = delta("oom_kill")
        group_kills = delta("oom_group_kill")
        oom_kills = max(kills, group_kills)
        return Evidence(
            oom_kills=oom_kills,
            proven=oom_kills > 0,
            source="cgroup",
            peak=peak,
            pressure=dict(pressure) if pressure is not None else None,
            extra={
                "cgroup": leaf,
                "oom_group_kills": group_kills,
                "max_events": delta("max"),
                "high_events": delta("high"),
                "oom_events": delta("oom"),
            },
        )

    def describe(self) -> Enforcement:
        data: Enforcement = {
            "mode": self.mode,
            "active": self.active,
            "reason": self.reason,
            "backend": self.backend,
            "unit": self.unit,
            "cgroup": self._shown_leaf,
            "memory_max": self._applied.get("memory_max"),
            "memory_high": self._applied.get("memory_high"),
            "swap_max": self._applied.get("swap_max"),
        }
        if self._notes:
            data["notes"] = list(self._notes)
        return data

    def _remove_leaf(self) -> None:
        leaf = self._leaf
        self._leaf = None
        self._procs_file = None
        if leaf is None:
            return
        if self.fs.populated(leaf):
            # What the job left behind (a daemon it started) would keep charging memory to
            # nobody's claim: the job's cgroup ends with the job.
            self.fs.kill(leaf)
        self.fs.rmdir(leaf)

    def close(self) -> None:
        """Kill what is left in the job leaf and remove it; systemd removes the scope."""
        self._remove_leaf()

