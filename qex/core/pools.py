"""Pool arithmetic: counted locks, GPUs and their memory, and which device a job gets.

Pure. A pool is a promise in the config file, never a reading of a driver, so a machine with
no CUDA still schedules GPU claims. Three places share these rules and must agree to the
unit: the coordinator refuses an impossible claim at submission (`check_claim`), the
scheduler admits and places a job (`assign`, `pool_usage`), and the supervisor tells the job
what it got (`job_env_for_assignment`). Keeping them in one module is what keeps them equal.

Vocabulary: a *declared* pool is a `[[pool]]` entry; it is shared with the other users of
the machine. Any other name a job claims or locks is an *implicit lock*: one unit, held by
one job of this queue at a time, never shared across users.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from qex.core.config import Pool
from qex.core.model import dataclass, field
from qex.core.names import lock_shown
from qex.core.records import Assignment, PoolClaim
from qex.core.units import format_size

#: The pool that `--gpu` and `--vram` claim.
GPU_POOL = "gpu"


@dataclass(frozen=True)
class EffectiveClaim:
    """One name a job needs, after locks were folded into claims.

    `pool` is None for an implicit lock. `size` is per device (None: the whole device).
    """

    name: str
    count: int
    size: int | None = None
    pool: Pool | None = None

    @property
    def is_implicit_lock(self) -> bool:
        return self.pool is None


@dataclass
class PoolUsage:
    """What the jobs of this queue hold in one pool: units, and bytes on each device."""

    units: int = 0
    per_device: dict[int, int] = field(default_factory=dict)

    def copy(self) -> PoolUsage:
        return PoolUsage(self.units, dict(self.per_device))


def pools_by_name(pools: Iterable[Pool]) -> dict[str, Pool]:
    return {pool.name: pool for pool in pools}


def _normal_size(size: int | None) -> int | None:
    """A size of 0 means "the whole device", the same as no size, as `[defaults] vram = 0` does."""
    if size is None or size <= 0:
        return None
    return int(size)


def effective_claims(
    locks: Iterable[str], claims: Mapping[str, PoolClaim], pools: Iterable[Pool]
) -> dict[str, EffectiveClaim]:
    """Every name a job needs, with its pool: `--lock NAME` is the same as `--claim NAME=1`.

    A claim of zero units with no size asks for nothing and is dropped, so an empty
    `--claim x=0` never makes a job wait for a lock. Names come back sorted, so the
    scheduler judges pools in the same order every pass.
    """
    declared = pools_by_name(pools)
    merged: dict[str, tuple[int, int | None]] = {}
    for name, claim in claims.items():
        merged[name] = (int(claim.count), _normal_size(claim.size))
    for name in locks:
        count, size = merged.get(name, (0, None))
        merged[name] = (max(count, 1), size)
    result: dict[str, EffectiveClaim] = {}
    for name in sorted(merged):
        count, size = merged[name]
        if count == 0 and size is None:
            continue
        result[name] = EffectiveClaim(name, count, size, declared.get(name))
    return result


def needed_on_device(pool: Pool, index: int, size: int | None) -> int:
    """The bytes a job takes on one device: its size, or the device's whole capacity."""
    if size is not None:
        return size
    devices = pool.devices or ()
    return devices[index] if 0 <= index < len(devices) else 0


def _size_word(pool: Pool) -> str:
    return pool.size or "capacity"


def check_claim(
    claims: Mapping[str, PoolClaim],
    locks: Iterable[str],
    pools: Sequence[Pool],
    defaults_vram: int | None = None,
) -> str | None:
    """Why this job can never start under this pool configuration, or None when it can.

    These refusals happen whatever `[queue] oversized` says: an idle machine grows no fifth
    GPU, so waiting for one would wait for ever. `defaults_vram` stands in for a GPU claim
    that gives no size (the spec builder normally writes it into the claim already).
    """
    if defaults_vram is not None and defaults_vram > 0:
        adjusted = dict(claims)
        gpu = adjusted.get(GPU_POOL)
        if gpu is not None and _normal_size(gpu.size) is None:
            adjusted[GPU_POOL] = PoolClaim(gpu.count, defaults_vram)
        claims = adjusted
    return check_effective(effective_claims(locks, claims, pools))


def check_effective(claims: Mapping[str, EffectiveClaim]) -> str | None:
    """`check_claim` for claims already merged by `effective_claims` (the scheduler's path)."""
    for claim in claims.values():
        message = _check_one(claim)
        if message is not None:
            return message
    return None


def _check_one(claim: EffectiveClaim) -> str | None:
    shown = lock_shown(claim.name)
    pool = claim.pool
    if claim.count < 0:
        return (
            f"the claim on `{shown}` asks for {claim.count} units, and a claim must be 1 unit "
            "or more; give a positive count"
        )
    if pool is None:
        if claim.name == GPU_POOL:
            return (
                f"the job claims {max(claim.count, 1)} GPU(s), but the config file declares no "
                "`gpu` pool, so this job can never start. Declare the devices in "
                "~/.config/qex.toml, for example:\n"
                "[[pool]]\nname = \"gpu\"\nsize = \"vram\"\n"
                "devices = [\"24GB\", \"24GB\"]\nenv = \"CUDA_VISIBLE_DEVICES\""
            )
        if claim.count > 1 or claim.size is not None:
            amount = str(claim.count)
            if claim.size is not None:
                amount += f" x {format_size(claim.size)}"
            units = max(claim.count, 1)
            return (
                f"the job claims {amount} of `{shown}`, a name that the config file does not "
                "declare as a pool, so qex treats it as a lock that one job holds at a time "
                "and this job can never start. Claim 1 with no size, or declare the pool in "
                f"the config file ([[pool]] with name = \"{shown}\" and count = {units})"
            )
        return None
    if claim.count == 0 and claim.size is not None:
        remedy = (
            "add `--gpu 1`" if pool.name == GPU_POOL
            else f"claim a device too, for example `--claim {shown}=1:{format_size(claim.size)}`"
        )
        return (
            f"the job asks for {format_size(claim.size)} of {_size_word(pool)} on each device of "
            f"the pool `{shown}` but claims no device, so it can never start; {remedy}"
        )
    if claim.size is not None and not pool.indexed:
        return (
            f"the job gives a size for the pool `{shown}`, which counts units and has no "
            "devices, so the job can never start as asked; claim a plain count such as "
            f"`--claim {shown}=1`, or declare the pool with `devices` in the config file"
        )
    if claim.count > pool.total:
        return (
            f"the job claims {claim.count} of the pool `{shown}`, which holds {pool.total} in "
            f"all, so this job can never start; claim {pool.total} or fewer, or declare a "
            "larger pool in the config file"
        )
    if claim.size is not None and pool.devices:
        largest = max(pool.devices)
        if claim.size > largest:
            word = _size_word(pool)
            return (
                f"the job needs {format_size(claim.size)} of {word} on each device, and the "
                f"largest device of the pool `{shown}` has {format_size(largest)}. qex never "
                f"adds the {word} of several devices together, so this job can never start; "
                f"ask for {format_size(largest)} or less per device"
            )
    return None


def add_assignment(usage: PoolUsage, pool: Pool | None, assignment: Assignment) -> None:
    """Count one job's assignment into `usage` (a whole device when the size is None)."""
    usage.units += int(assignment.units)
    for index in assignment.devices:
        taken = assignment.size if assignment.size is not None else (
            needed_on_device(pool, index, None) if pool is not None else 0
        )
        usage.per_device[index] = usage.per_device.get(index, 0) + int(taken)


def pool_usage(
    assignments: Iterable[Mapping[str, Assignment]], pools: Sequence[Pool]
) -> dict[str, PoolUsage]:
    """Sum what active jobs were given, per pool: what the rest of this queue cannot take."""
    declared = pools_by_name(pools)
    usage: dict[str, PoolUsage] = {}
    for assigned in assignments:
        for name, assignment in assigned.items():
            add_assignment(usage.setdefault(name, PoolUsage()), declared.get(name), assignment)
    return usage


def free_devices(
    pool: Pool, size: int | None, used_by_us: PoolUsage, peer_devices: frozenset[int] = frozenset()
) -> list[int]:
    """Devices that could take `size` now, best first: most free capacity, then lowest index.

    A device that another user holds any part of is out entirely: peers publish indices,
    not amounts, so sharing one would be a guess.
    """
    candidates: list[tuple[int, int]] = []
    for index, capacity in enumerate(pool.devices or ()):
        if index in peer_devices:
            continue
        needed = needed_on_device(pool, index, size)
        if needed <= 0:
            continue
        free = capacity - used_by_us.per_device.get(index, 0)
        if free >= needed:
            candidates.append((-free, index))
    candidates.sort()
    return [index for _, index in candidates]


def assign(
    claim: EffectiveClaim | PoolClaim,
    pool: Pool,
    used_by_us: PoolUsage,
    peer_devices: frozenset[int] = frozenset(),
    peer_units: int = 0,
) -> Assignment | None:
    """What the job gets from `pool` now, or None when the pool cannot hold it yet."""
    count = int(claim.count)
    size = _normal_size(claim.size)
    if not pool.indexed:
        free = pool.total - used_by_us.units - peer_units
        return Assignment(units=count) if count <= free else None
    if count <= 0:
        return None
    chosen = free_devices(pool, size, used_by_us, peer_devices)[:count]
    if len(chosen) < count:
        return None
    return Assignment(units=count, devices=sorted(chosen), size=size)


_NOT_ENV = re.compile(r"[^A-Za-z0-9_]")


def env_word(name: str) -> str:
    """A pool or size name as part of a variable name: upper case, `_` for anything else."""
    return _NOT_ENV.sub("_", name).upper()


def job_env_for_assignment(pool: Pool, assignment: Assignment) -> dict[str, str]:
    """The variables that tell a job what it was given; these override captured values.

    The pool's own `env` (e.g. CUDA_VISIBLE_DEVICES) is what a framework reads with no code
    change; the QEX_* names are always there so a script can rely on them.
    """
    word = env_word(pool.name)
    if not pool.indexed:
        return {f"QEX_CLAIM_{word}": str(assignment.units)}
    devices = ",".join(str(index) for index in sorted(assignment.devices))
    env = {f"QEX_{word}_DEVICES": devices}
    if pool.env:
        env[pool.env] = devices
    per_device = assignment.size
    if per_device is None and assignment.devices:
        per_device = min(needed_on_device(pool, index, None) for index in assignment.devices)
    if per_device is not None:
        env[f"QEX_{word}_{env_word(pool.size) if pool.size else 'SIZE'}"] = str(per_device)
    return env
