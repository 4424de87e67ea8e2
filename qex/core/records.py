"""The two records of a job: `spec.json` (what was asked) and `status.json` (what happened).

Pure data. Readers accept missing optional fields and ignore unknown ones, because the
format is additive only: a record written by a newer qex must still load here, and one
written here must load in an older qex.

Single-writer rule for `status.json`: the coordinator writes it until it starts the
supervisor, the supervisor from then until the job is final (or handed back as `queued`
for an OOM retry), and the coordinator again for queued-only changes (reasons, cancel,
skip, expiry) and for recovery of records whose supervisor is gone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from qex.core import model
from qex.core.model import dataclass, field
from qex.core.states import FINAL, ClaimSource, EnforceMode, EnvCapture, OomEvidence, State

T = TypeVar("T")

# The parts of a record below are JSON objects on disk and on the wire, so they are typed as
# TypedDicts: the same dicts as ever (nothing to convert, old records load as they are), with
# names and types that mypy checks. Every key may be missing in a record from an older qex.
# They exist for the type checker only: building five TypedDict classes would cost every
# `qex status` a measurable part of a millisecond, and no code needs them at run time.

if TYPE_CHECKING:

    class PoolClaimPart(TypedDict, total=False):
        """A claim on one pool, as `claims` holds it (see `PoolClaim`)."""

        count: int
        size: int | None


    class AssignmentPart(TypedDict, total=False):
        """What one pool gave a job, as `assigned` holds it (see `Assignment`)."""

        units: int
        devices: list[int]
        size: int | None


    class Usage(TypedDict, total=False):
        """What the job really used: peak memory in bytes, CPU seconds, where the peak came from."""

        max_rss: int
        source: str                  # memory.peak | rusage
        cpu_secs: float
        orphans_reaped: int
        pressure: dict[str, Any] | None


    class Enforcement(TypedDict, total=False):
        """How memory was enforced for the last attempt (`qex help enforcement`)."""

        mode: EnforceMode
        active: bool
        reason: str | None
        backend: str | None
        unit: str | None
        cgroup: str | None
        memory_max: int | None
        memory_high: int | None
        swap_max: int | None
        notes: list[str]


    class LogsDropped(TypedDict, total=False):
        """Output that `[logs] max_bytes`, or a log write that failed, kept out of the log
        files."""

        write_error: str | None
        stdout_bytes: int
        stdout_lines: int
        stderr_bytes: int
        stderr_lines: int
        limit: int
        incomplete: bool


def dropped_counts(part: LogsDropped | None, stream: str) -> tuple[int, int]:
    """(bytes, lines) that the output limit removed from `stream` (stdout or stderr)."""
    if not part:
        return 0, 0
    if stream == "stdout":
        size, lines = part.get("stdout_bytes"), part.get("stdout_lines")
    elif stream == "stderr":
        size, lines = part.get("stderr_bytes"), part.get("stderr_lines")
    else:
        return 0, 0
    return (size if isinstance(size, int) else 0), (lines if isinstance(lines, int) else 0)


def _plain(value: Any) -> Any:
    """A copy of a JSON-shaped value (dicts and lists copied, scalars shared).

    `dataclasses.asdict` does the same through deepcopy and is several times slower; records
    are turned into dicts for every write and every event, so this is a hot path.
    """
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


_CONTAINERS = (dict, list)


def _to_dict(record: Any) -> dict[str, Any]:
    # Most fields are scalars: only a dict or a list is handed to `_plain` (a call per field
    # was most of the cost, and a record is made a dict for every write and every event).
    return {key: _plain(value) if isinstance(value, _CONTAINERS) else value
            for key, value in vars(record).items()}


_NAMES: dict[type, frozenset[str]] = {}


def _from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """Build a dataclass from a dict, keeping only the fields it knows."""
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = frozenset(f.name for f in model.fields(cls))
    return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class PoolClaim:
    """A claim on one pool: `count` units, and `size` bytes on each device (None = whole device)."""

    count: int
    size: int | None = None

    def to_dict(self) -> PoolClaimPart:
        return {"count": self.count, "size": self.size}


@dataclass
class Assignment:
    """What the coordinator gave a job from one pool: units, device indices, size per device."""

    units: int
    devices: list[int] = field(default_factory=list)
    size: int | None = None

    def to_dict(self) -> AssignmentPart:
        return {"units": self.units, "devices": list(self.devices), "size": self.size}


@dataclass
class JobSpec:
    """Everything resolved at submission. Written once, 0600: `env` can hold secrets."""

    id: str
    name: str
    cwd: str
    command: list[str]
    env: dict[str, str]
    cpu: int
    mem: int
    submitted_at: float
    timeout: float | None = None
    max_queue_time: float | None = None
    tags: list[str] = field(default_factory=list)
    priority: int = 0
    env_capture: EnvCapture = "all"
    claim_source: ClaimSource = "default"
    group: str | None = None
    group_name: str | None = None
    needs: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    locks: list[str] = field(default_factory=list)
    claims: dict[str, PoolClaimPart] = field(default_factory=dict)
    retries: int = 0
    nice: int | None = None
    dedupe_key: str | None = None
    dedupe_window: float = 0
    learn_key: list[str] | None = None
    #: The env keys that qex wrote as claim hints (QEX_MEM, OMP_NUM_THREADS, ...), so an
    #: OOM retry that raises the claim can tell the job the new size.
    hint_keys: list[str] = field(default_factory=list)
    #: True when the user gave both --cpu and --mem (claim hints are written only then).
    explicit_claim: bool = False
    #: Where the job runs: None (this machine) or "slurm" (`[engine] kind`, `--engine`).
    engine: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return _to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobSpec:
        return _from_dict(cls, data)

    def pool_claims(self) -> dict[str, PoolClaim]:
        return {
            name: PoolClaim(int(c.get("count", 0)), c.get("size"))
            for name, c in self.claims.items()
        }


@dataclass
class JobStatus:
    """The primary record of a job, rewritten atomically at every change."""

    id: str
    name: str
    command: list[str]
    cwd: str
    state: State = State.QUEUED
    submitted_at: float = 0.0
    sequence: int = 0
    cpu: int = 1
    mem: int = 0
    claim_source: ClaimSource = "default"
    pid: int | None = None
    pid_start_token: str | None = None
    last_pid: int | None = None
    supervisor_pid: int | None = None
    supervisor_start_token: str | None = None
    boot_id: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    started_at: float | None = None
    finished_at: float | None = None
    group: str | None = None
    group_name: str | None = None
    usage: Usage | None = None
    forced: bool = False
    forced_reason: str | None = None
    queue_pause_secs: float = 0.0
    blocked_reason: str | None = None
    blocked_since: float | None = None
    passed_by: int = 0
    error: str | None = None
    needs: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    locks: list[str] = field(default_factory=list)
    dedupe_key: str | None = None
    claims: dict[str, PoolClaimPart] = field(default_factory=dict)
    assigned: dict[str, AssignmentPart] = field(default_factory=dict)
    attempts: int = 0
    retries_left: int = 0
    #: OOM corrections left ([retry] on_oom), counted apart from --retries.
    oom_retries_left: int | None = None
    caused_by: str | None = None
    logs_dropped: LogsDropped | None = None
    tags: list[str] = field(default_factory=list)
    #: How memory was enforced for the last attempt.
    enforcement: Enforcement | None = None
    #: Where an `oom` verdict came from: "cgroup" (this job's own leaf, proven) or
    #: "session" (the login session's counter; reported, never retried).
    oom_evidence: OomEvidence | None = None
    #: False once the job has run: --max-queue-time never expires a later attempt.
    queue_time_applies: bool = True
    note: str | None = None
    #: The engine that runs the job (None: this machine) and its own id there (Slurm's job id).
    engine: str | None = None
    engine_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = _to_dict(self)
        data["state"] = str(self.state)  # a plain str, as every reader of a dict expects
        return data

    def __post_init__(self) -> None:
        # A record read from JSON (or built by a test) names its state as a plain string.
        if type(self.state) is not State:
            self.state = State(self.state)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobStatus:
        """The record from its JSON form; ValueError for a state this qex does not know."""
        return _from_dict(cls, data)

    @classmethod
    def new(cls, spec: JobSpec, *, boot_id: str | None, oom_retries: int) -> JobStatus:
        return cls(
            id=spec.id, name=spec.name, command=list(spec.command), cwd=spec.cwd,
            submitted_at=spec.submitted_at, cpu=spec.cpu, mem=spec.mem,
            claim_source=spec.claim_source, group=spec.group, group_name=spec.group_name,
            needs=list(spec.needs), after=list(spec.after), locks=list(spec.locks),
            dedupe_key=spec.dedupe_key, claims=dict(spec.claims), tags=list(spec.tags),
            retries_left=spec.retries, oom_retries_left=oom_retries, boot_id=boot_id,
            engine=spec.engine,
        )

    @property
    def final(self) -> bool:
        return self.state in FINAL

    def back_to_queue(self) -> None:
        """Make the record `queued` again: no process, no queue reason, no end.

        What the job keeps is the caller's choice: an OOM retry keeps `started_at` and
        `attempts` (the job has run), a start that never happened clears them itself.
        """
        self.state = State.QUEUED
        self.pid = None
        self.pid_start_token = None
        self.supervisor_pid = None
        self.supervisor_start_token = None
        self.exit_code = None
        self.signal = None
        self.finished_at = None
        self.blocked_reason = None
        self.blocked_since = None
        self.passed_by = 0
