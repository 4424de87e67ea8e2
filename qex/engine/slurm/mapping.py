"""Pure translations between qex and Slurm: claims to `sbatch` options, Slurm's answers to
qex's words. No process is started here; every function is tested without Slurm.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Iterable, Mapping, Sequence

from qex.core.model import dataclass, field
from qex.core.states import State
from qex.core.units import format_size

MIB = 1024 * 1024
#: Slurm's time limit is in minutes; qex's own timer (seconds) must fire first, so the limit
#: it asks for is the timeout rounded up, plus this margin for the supervisor's record.
TIME_MARGIN_MINUTES = 1
#: The pool whose claim becomes `--gres=gpu:N`.
GPU_POOL = "gpu"

# -- claims to sbatch ----------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """What one job asks Slurm for."""

    job_id: str                      # qex's id
    name: str
    cpu: int
    mem: int                         # bytes
    gpus: int = 0
    timeout: float | None = None     # seconds
    afterok: tuple[str, ...] = ()    # Slurm job ids this job needs (`needs`)
    afterany: tuple[str, ...] = ()   # Slurm job ids this job runs after (`after`)
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    extra: tuple[str, ...] = ()      # `[engine] sbatch_options`, as given
    output: str | None = None        # where Slurm writes the batch script's own output
    chdir: str | None = None         # where the batch script starts (the job directory)


def mem_megabytes(mem: int) -> int:
    """`--mem` in MiB, rounded up: Slurm must never get less than the claim."""
    return max(1, math.ceil(mem / MIB))


def time_limit(timeout: float | None) -> str | None:
    """`--time` in whole minutes: the timeout rounded up plus the margin, or None."""
    if timeout is None or timeout <= 0:
        return None
    return str(math.ceil(timeout / 60) + TIME_MARGIN_MINUTES)


def dependency(afterok: Sequence[str], afterany: Sequence[str]) -> str | None:
    """`--dependency`: `afterok:1:2,afterany:3` (every condition must hold), or None."""
    parts: list[str] = []
    if afterok:
        parts.append("afterok:" + ":".join(afterok))
    if afterany:
        parts.append("afterany:" + ":".join(afterany))
    return ",".join(parts) or None


def gpu_count(claims: Mapping[str, Mapping[str, object]]) -> int:
    claim = claims.get(GPU_POOL) or {}
    count = claim.get("count", 0)
    return int(count) if isinstance(count, int) else 0


def job_name(job_id: str, name: str) -> str:
    """Slurm's job name: `qex-<id8>-<name>`, so `squeue` says whose job it is."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:40]
    return f"qex-{job_id[:8]}-{safe}" if safe else f"qex-{job_id[:8]}"


def sbatch_args(request: Request, *, hold: bool = True) -> list[str]:
    """The options of `sbatch` for a request (the script path goes after them).

    `--hold` keeps the job from starting until qex has written Slurm's id into the record
    (then `scontrol release`), so the node never reads a record without it.
    """
    # --no-requeue: a job Slurm would start again after a node failure would find its record
    # already used; qex records the failure instead, and `qex rerun` starts it again.
    args = ["--parsable", f"--job-name={job_name(request.job_id, request.name)}",
            "--nodes=1", "--ntasks=1", "--no-requeue", f"--cpus-per-task={request.cpu}",
            f"--mem={mem_megabytes(request.mem)}M"]
    if request.gpus > 0:
        args.append(f"--gres=gpu:{request.gpus}")
    limit = time_limit(request.timeout)
    if limit is not None:
        args.append(f"--time={limit}")
    dep = dependency(request.afterok, request.afterany)
    if dep is not None:
        args.append(f"--dependency={dep}")
        # A failed dependency leaves the job pending (DependencyNeverSatisfied); qex records
        # it as skipped and takes it out itself, so Slurm must not cancel it first.
        args.append("--kill-on-invalid-dep=no")
    for option, value in (("partition", request.partition), ("account", request.account),
                          ("qos", request.qos)):
        if value:
            args.append(f"--{option}={value}")
    if request.output:
        args.append(f"--output={request.output}")
    if request.chdir:
        args.append(f"--chdir={request.chdir}")
    if hold:
        args.append("--hold")
    args.extend(request.extra)
    return args


def batch_script(*, python: str, job_id: str, env: Mapping[str, str]) -> str:
    """The batch script: set qex's directories, then run qex's node program, which starts
    the supervisor inside the allocation."""
    lines = ["#!/bin/sh",
             f"# qex: the batch script of the job {job_id}; Slurm runs it on the node.",
             "# It starts qex's own supervisor, which writes the record into the shared state."]
    for key in sorted(env):
        lines.append(f"export {key}={shlex.quote(env[key])}")
    # -P: the script runs in the job's directory, whose own `qex` must not shadow ours.
    lines.append(f"exec {shlex.quote(python)} -P -m qex.engine.slurm.node {shlex.quote(job_id)}")
    return "\n".join(lines) + "\n"


#: Variables that say which devices an allocation holds; Slurm sets them on the node.
DEVICE_VARIABLES = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                    "GPU_DEVICE_ORDINAL", "ZE_AFFINITY_MASK")


#: Set by Slurm on the node when the allocation holds GPUs.
GPU_ALLOCATION_VARIABLES = ("SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "SLURM_GPUS_ON_NODE")


def allocation_env(batch_env: Mapping[str, str]) -> dict[str, str | None]:
    """What the job's environment takes from its allocation on the node: every SLURM_*
    variable, and the device variables as Slurm set them for the GPUs it gave. Without GPUs
    in the allocation the device variables are removed: a value from the submit host (in
    spec.json, or exported by sbatch) would name devices the job does not hold."""
    found: dict[str, str | None] = {
        key: value for key, value in batch_env.items()
        if key.startswith(("SLURM_", "SLURMD_"))
    }
    has_gpus = any(batch_env.get(key) for key in GPU_ALLOCATION_VARIABLES)
    for key in DEVICE_VARIABLES:
        found[key] = batch_env.get(key) if has_gpus else None
    return found


def parse_job_id(text: str) -> str:
    """Slurm's id from `sbatch --parsable` (`123` or `123;cluster`); ValueError if none."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    job = first.split(";", 1)[0].strip()
    if not job.isdigit():
        raise ValueError(f"sbatch answered `{first[:80]}` instead of a job id")
    return job


# -- partitions ------------------------------------------------------------------------------

#: `sinfo` output format: partition, CPUs per node, memory per node (MB), GRES, time limit,
#: availability.
SINFO_FORMAT = "%P|%c|%m|%G|%l|%a"


@dataclass
class Partition:
    name: str
    default: bool = False
    cpus: int = 0            # the most cores on one node
    mem_mb: int = 0          # the most memory on one node, MB
    gpus: int = 0            # the most GPUs on one node
    max_minutes: int | None = None
    up: bool = True


def _number(text: str) -> int:
    digits = ""
    for ch in text.strip():
        if ch.isdigit():
            digits += ch
        else:
            break
    return int(digits) if digits else 0


def _gres_gpus(text: str) -> int:
    best = 0
    for item in text.split(","):
        parts = item.strip().split(":")
        if parts and parts[0] == "gpu" and len(parts) >= 2:
            best = max(best, _number(parts[-1].split("(")[0]))
    return best


def minutes(text: str) -> int | None:
    """Slurm's time (`infinite`, `30`, `1:00:00`, `2-00:00:00`) in minutes; None = no limit."""
    text = text.strip()
    if not text or text in ("infinite", "UNLIMITED", "n/a", "NONE"):
        return None
    days = 0
    if "-" in text:
        day_text, text = text.split("-", 1)
        days = _number(day_text)
    parts = [_number(p) for p in text.split(":")]
    if len(parts) == 1:
        total = parts[0] if days == 0 else parts[0] * 60
    elif len(parts) == 2:
        total = parts[0] * 60 + parts[1] if days else parts[0] + math.ceil(parts[1] / 60)
    else:
        total = parts[0] * 60 + parts[1] + math.ceil(parts[2] / 60)
    return days * 1440 + total


def parse_partitions(text: str) -> list[Partition]:
    """Partitions from `sinfo -h -o SINFO_FORMAT` (one line per partition and node kind)."""
    found: dict[str, Partition] = {}
    for line in text.splitlines():
        cells = line.strip().split("|")
        if len(cells) < 6 or not cells[0]:
            continue
        raw = cells[0]
        name = raw.rstrip("*")
        part = found.setdefault(name, Partition(name=name))
        part.default = part.default or raw.endswith("*")
        part.cpus = max(part.cpus, _number(cells[1]))
        part.mem_mb = max(part.mem_mb, _number(cells[2]))
        part.gpus = max(part.gpus, _gres_gpus(cells[3]))
        part.max_minutes = minutes(cells[4])
        part.up = cells[5].strip() == "up"
    return list(found.values())


def refusal(request: Request, partitions: Iterable[Partition]) -> str | None:
    """Why no partition can ever hold this claim, or None when one can."""
    parts = list(partitions)
    if not parts:
        return ("Slurm shows no partition, so this job could never start; check `sinfo` (is "
                "slurmctld running?) and submit again")
    if request.partition:
        wanted = set(request.partition.split(","))
        chosen = [p for p in parts if p.name in wanted]
        if not chosen:
            names = ", ".join(sorted(p.name for p in parts))
            return (f"Slurm has no partition `{request.partition}`; the partitions are "
                    f"{names}; correct [engine] partition")
    else:
        chosen = [p for p in parts if p.default] or parts
    problems: list[str] = []
    need_minutes = minutes(time_limit(request.timeout) or "")
    for part in chosen:
        why: list[str] = []
        if request.cpu > part.cpus:
            why.append(f"{request.cpu} cores (its largest node has {part.cpus})")
        if mem_megabytes(request.mem) > part.mem_mb:
            why.append(f"{format_size(request.mem)} of memory (its largest node has "
                       f"{format_size(part.mem_mb * MIB)})")
        if request.gpus > part.gpus:
            why.append(f"{request.gpus} GPUs (its largest node has {part.gpus})")
        if (need_minutes is not None and part.max_minutes is not None
                and need_minutes > part.max_minutes):
            why.append(f"{need_minutes} minutes (its limit is {part.max_minutes})")
        if not why:
            return None
        problems.append(f"the partition `{part.name}` cannot give " + " and ".join(why))
    return ("no Slurm partition can hold this claim: " + "; ".join(problems)
            + "; ask for less (--cpu, --mem, --gpu, --timeout) or choose another partition "
            "([engine] partition)")


# -- squeue --------------------------------------------------------------------------------

#: `squeue` output format: job id, state (long), reason.
SQUEUE_FORMAT = "%i|%T|%r"

PENDING_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
                            "RESV_DEL_HOLD", "SPECIAL_EXIT"})
LIVE_STATES = frozenset({"RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "STOPPED",
                         "SIGNALING", "STAGE_OUT", "RESIZING"})


@dataclass(frozen=True)
class SlurmJob:
    state: str
    reason: str


def parse_squeue(text: str) -> dict[str, SlurmJob]:
    """Slurm id -> state and reason, from `squeue -h -o SQUEUE_FORMAT`."""
    found: dict[str, SlurmJob] = {}
    for line in text.splitlines():
        cells = line.strip().split("|")
        if len(cells) < 3 or not cells[0]:
            continue
        found[cells[0]] = SlurmJob(state=cells[1].strip().upper(), reason=cells[2].strip())
    return found


def pending(job: SlurmJob) -> bool:
    return job.state in PENDING_STATES


def live(job: SlurmJob) -> bool:
    return job.state in LIVE_STATES


def ended(job: SlurmJob) -> bool:
    return not pending(job) and not live(job)


DEPENDENCY_NEVER = "DependencyNeverSatisfied"


def reason_words(reason: str, slurm_id: str) -> str:
    """A pending job's reason in qex's words (`qex list`, `qex status`)."""
    head = f"waits in Slurm (job {slurm_id})"
    word = reason.strip()
    if word in ("", "None", "(null)"):
        return f"{head} for Slurm's scheduler to look at it."
    if word == "Resources":
        return f"{head} for resources: no node has the cores, memory or GPUs it asks for free now."
    if word in ("Priority", "Prolog"):
        return f"{head} behind jobs of higher priority (fair share)."
    if word == "Dependency":
        return f"{head} for the jobs it depends on."
    if word == DEPENDENCY_NEVER:
        return f"{head}: a job it depends on did not complete, so it can never start."
    if word.startswith("QOS") or word.startswith("MaxJob") or word.startswith("MaxCpu"):
        return f"{head} for a QOS limit ({word}); it starts when jobs under that QOS end."
    if word.startswith("Assoc"):
        return f"{head} for a limit of the account ({word}); it starts when jobs of it end."
    if word in ("JobHeldUser", "JobHeldAdmin"):
        return f"{head}: it is held ({word}); `scontrol release` lets it start."
    if word.startswith("Partition"):
        return f"{head}: the partition refuses it ({word}); it may never start as asked."
    if word in ("ReqNodeNotAvail", "NodeDown", "Nodes_required_for_job_are_DOWN,_DRAINED_"
                "or_reserved_for_jobs_in_higher_priority_partitions") or "DOWN" in word:
        return f"{head}: the nodes it needs are not available ({word})."
    if word == "BeginTime":
        return f"{head} for its start time."
    if word == "Reservation":
        return f"{head} for its reservation."
    return f"{head} ({word})."


# -- the end of a job that left no result -------------------------------------------------


@dataclass(frozen=True)
class Ending:
    """The record qex writes for a job that Slurm ended without a supervisor's result."""

    state: State
    error: str
    oom: bool = False
    extra: dict[str, object] = field(default_factory=dict)


def ending(slurm_state: str | None, *, ran: bool, slurm_id: str, killed_by_qex: bool) -> Ending:
    """What a Slurm end state means when qex's supervisor wrote no final record.

    `ran`: the record says the job started (the supervisor began); `killed_by_qex`: a person
    stopped it with `qex kill`.
    """
    where = f"Slurm job {slurm_id}"
    word = (slurm_state or "").upper()
    if killed_by_qex:
        return Ending(State.KILLED, f"qex kill stopped this job ({where}, {word or 'ended'}).")
    if word == "CANCELLED":
        if not ran:
            return Ending(State.CANCELLED, (
                f"Slurm cancelled this job before it started ({where}: scancel or an "
                "administrator, not qex)."))
        return Ending(State.KILLED, (
            f"Slurm cancelled this job while it ran ({where}: scancel or an administrator, not "
            "qex)."))
    if word == "TIMEOUT":
        return Ending(State.TIMEOUT, f"Slurm's time limit ended this job ({where}).")
    if word == "DEADLINE":
        return Ending(State.EXPIRED, f"Slurm's deadline passed before the job ended ({where}).")
    if word in ("NODE_FAIL", "BOOT_FAIL"):
        return Ending(State.FAILED, (
            f"the node of {where} failed ({word}), and no result of the job reached the shared "
            "state directory; run it again with `qex rerun`."))
    if word == "PREEMPTED":
        return Ending(State.KILLED, (
            f"Slurm preempted this job for a job of higher priority ({where}); run it again "
            "with `qex rerun`."))
    if word == "OUT_OF_MEMORY":
        return Ending(State.OOM, (
            f"Slurm stopped this job for memory ({where}: OUT_OF_MEMORY) before qex's "
            "supervisor could record it."), oom=True)
    if not word:
        return Ending(State.FAILED, (
            f"Slurm no longer knows {where}, and qex's supervisor left no result; the state "
            "directory may not be shared with the node (see [engine] shared_dir), or the node "
            "could not start qex: read slurm.out in the job directory."))
    return Ending(State.FAILED, (
        f"{where} ended as {word}, and qex's supervisor left no result; read slurm.out in the "
        "job directory (Slurm's own output of the batch script)."))


def node_exit_status(state: str) -> int:
    """The batch script's exit status for a record: 0 only for `completed`, so that Slurm's
    `afterok` means what qex's `needs` means."""
    return 0 if state == State.COMPLETED.value else 1
