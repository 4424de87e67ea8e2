"""The configuration model: every section and key of `qex.toml`, with parsed values.

Pure. `parse_config(data, source)` (in `qex.core.config_parse`) turns the TOML dict into a
`Config` or raises `ConfigError` naming the key. Values here are already in base units:
sizes in bytes, durations in seconds (None = no limit), budgets still in the form the user
gave (`BudgetValue`) because they resolve against the machine at use time.
"""

from __future__ import annotations

from qex.core.model import dataclass, field


class ConfigError(ValueError):
    """A config file qex cannot use. The message names the file, the key and the remedy."""


@dataclass(frozen=True)
class BudgetValue:
    """`75%` of the machine, or an absolute amount (cores or bytes)."""

    fraction: float | None = None
    absolute: int | None = None

    def resolve(self, machine_total: int, minimum: int) -> int:
        if self.absolute is not None:
            return max(minimum, self.absolute)
        fraction = 0.75 if self.fraction is None else self.fraction
        return max(minimum, int(machine_total * fraction))

    def text(self) -> str:
        if self.absolute is not None:
            return str(self.absolute)
        return f"{round((0.75 if self.fraction is None else self.fraction) * 100, 3):g}%"


@dataclass(frozen=True)
class Machine:
    """What the config resolves against; measured by the platform layer, passed in."""

    cores: int
    mem_total: int


@dataclass(frozen=True)
class BudgetSection:
    cpu: BudgetValue = BudgetValue(fraction=0.75)
    mem: BudgetValue = BudgetValue(fraction=0.75)


@dataclass(frozen=True)
class SystemSection:
    reserve_mem: int = 2 * 1024**3
    max_pressure: float = 20.0


@dataclass(frozen=True)
class EnforceSection:
    mode: str = "off"                # off | soft | hard
    mem_overcommit: float = 1.5      # soft: memory.max = claim * this
    use_systemd: bool = True         # permit a transient systemd scope for the cgroup


@dataclass(frozen=True)
class PeersSection:
    enabled: bool = True
    dir: str = "/tmp/qex"
    stale_after: float = 30.0


@dataclass(frozen=True)
class QueueSection:
    oversized: str = "run-when-idle"  # run-when-idle | reject | queue
    settle: float = 3.0
    max_bypass: int = 2


@dataclass(frozen=True)
class PolitenessSection:
    nice: int = 10
    io: str = "none"                 # none | best-effort | idle
    oom_score_adj: int = 0


DEFAULT_MINIMAL_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TZ")


@dataclass(frozen=True)
class SubmitSection:
    env_capture: str = "all"         # all | minimal | none
    minimal_env: tuple[str, ...] = DEFAULT_MINIMAL_ENV


@dataclass(frozen=True)
class ClaimsSection:
    export_env: bool = True
    also: tuple[str, ...] = ()       # "java", "make"


@dataclass(frozen=True)
class LearnSection:
    enabled: bool = True
    margin: float = 1.5


@dataclass(frozen=True)
class LogsSection:
    max_bytes: int | None = 32 * 1024**2   # None = no limit


@dataclass(frozen=True)
class RetrySection:
    on_oom: int = 2
    growth: float = 2.0


@dataclass(frozen=True)
class HistorySection:
    keep: float = 86400.0


@dataclass(frozen=True)
class GcSection:
    keep: float = 86400.0


@dataclass(frozen=True)
class DefaultsSection:
    cpu: int = 1
    mem: int | None = None           # None = machine memory / cores (at least 256MB)
    timeout: float | None = None
    max_queue_time: float | None = None
    vram: int | None = None          # None/0 = a job with no --vram takes the whole device

    def default_mem(self, machine: Machine) -> int:
        if self.mem is not None:
            return self.mem
        return max(256 * 1024**2, machine.mem_total // max(1, machine.cores))


DEFAULT_STOP_STATES = ("completed", "failed", "killed", "timeout", "expired", "oom")


@dataclass(frozen=True)
class HooksSection:
    on_stop: tuple[str, ...] = ()
    on_stop_states: tuple[str, ...] = DEFAULT_STOP_STATES
    timeout: float = 30.0


@dataclass(frozen=True)
class EngineSection:
    """Where jobs run: `local` (this machine's queue) or `slurm` (see docs/slurm.md)."""

    kind: str = "local"
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    sbatch_options: tuple[str, ...] = ()
    #: A directory that every node sees at the same path; qex's state dir must be inside it.
    shared_dir: str | None = None
    #: Seconds between two looks at Slurm's queue (one `squeue` for all jobs).
    poll: float = 5.0
    #: The Python that runs qex on the nodes (None: the coordinator's own interpreter).
    python: str | None = None


@dataclass(frozen=True)
class Pool:
    """`count` units, or `devices` (a capacity each); `size` names the quantity (e.g. vram)."""

    name: str
    count: int | None = None
    devices: tuple[int, ...] | None = None
    size: str | None = None
    env: str | None = None

    @property
    def total(self) -> int:
        return len(self.devices) if self.devices is not None else int(self.count or 0)

    @property
    def indexed(self) -> bool:
        return self.devices is not None


@dataclass(frozen=True)
class Config:
    budget: BudgetSection = BudgetSection()
    system: SystemSection = SystemSection()
    enforce: EnforceSection = EnforceSection()
    peers: PeersSection = PeersSection()
    queue: QueueSection = QueueSection()
    politeness: PolitenessSection = PolitenessSection()
    submit: SubmitSection = SubmitSection()
    claims: ClaimsSection = ClaimsSection()
    learn: LearnSection = LearnSection()
    logs: LogsSection = LogsSection()
    retry: RetrySection = RetrySection()
    history: HistorySection = HistorySection()
    gc: GcSection = GcSection()
    defaults: DefaultsSection = DefaultsSection()
    hooks: HooksSection = HooksSection()
    engine: EngineSection = EngineSection()
    pools: tuple[Pool, ...] = field(default_factory=tuple)
    #: Warnings about the file that do not stop qex: settings of the earlier qex that have no
    #: effect here, and a `[politeness]` fault (the defaults are used). Commands that read
    #: the config print each once.
    notes: tuple[str, ...] = ()

    def cpu_budget(self, machine: Machine) -> int:
        return self.budget.cpu.resolve(machine.cores, 1)

    def mem_budget(self, machine: Machine) -> int:
        return self.budget.mem.resolve(machine.mem_total, 64 * 1024**2)

    def pool(self, name: str) -> Pool | None:
        for pool in self.pools:
            if pool.name == name:
                return pool
        return None
