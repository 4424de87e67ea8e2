"""The pools a submission claims: `--gpu`, `--vram`, `--claim`, `--lock` and `[resources]`.

Pure. Everything here is judged against `[[pool]]` at submission, so a claim that can never
be met (a fifth GPU on a machine with four, 40GB on a 24GB card) is refused before any job
exists, whatever `[queue] oversized` says. Errors are `ClaimError` sentences;
`qex.core.jobspec` turns them into `SpecError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from qex.core.claims import ClaimError, parse_claim_option, parse_lock_option
from qex.core.config import Config
from qex.core.jobfile import UNSET, JobFile
from qex.core.names import visible
from qex.core.pools import GPU_POOL, check_claim
from qex.core.records import PoolClaim
from qex.core.units import UnitError, parse_size


def pool_claims(
    jf: JobFile,
    *,
    claim_options: Sequence[str],
    gpu_option: str | int | None,
    vram_option: str | int | None,
    lock_options: Sequence[str],
    config: Config,
    check: bool = True,
) -> tuple[dict[str, PoolClaim], list[str]]:
    """The pool claims and the plain locks of one job, checked against `[[pool]]` (not with
    `check=False`: a job for another engine, whose devices are that engine's to judge).

    The command line replaces the job file per pool; `--gpu`/`--vram` build the claim on
    the pool `gpu`; `--lock NAME` stays a lock and `--lock NAME:N` (N > 1) becomes a claim.
    """
    claims: dict[str, PoolClaim] = dict(jf.resources.claims)
    cli_claims: dict[str, PoolClaim] = {}
    for item in claim_options:
        name, claim = parse_claim_option(item)
        if name in cli_claims:
            raise ClaimError(f"--claim {name} is given twice; give each pool once")
        cli_claims[name] = claim
    claims.update(cli_claims)

    gpu = _gpu_count(gpu_option) if gpu_option is not None else jf.resources.gpu
    vram_given = vram_option is not None or jf.resources.vram is not UNSET
    if vram_option is not None:
        vram = _size_option(vram_option, "--vram") or None
    elif jf.resources.vram is not UNSET:
        vram = jf.resources.vram
    else:
        vram = config.defaults.vram
    if gpu_option is not None and GPU_POOL in cli_claims:
        raise ClaimError("--gpu and --claim gpu=... both claim GPUs; give one of them")
    if vram_given and not gpu and GPU_POOL not in cli_claims:
        raise ClaimError(
            "--vram (or vram in [resources]) is memory on each GPU the job gets, so the job "
            "must also claim a device; add --gpu 1"
        )
    if gpu:
        claims[GPU_POOL] = PoolClaim(count=gpu, size=vram)

    locks: list[str] = []
    for item in [*jf.locks, *lock_options]:
        name, count = parse_lock_option(item)
        if count == 1:
            locks.append(name)
        elif name in claims:
            raise ClaimError(f"`{name}` is claimed twice, as a lock and as a claim; give it once")
        else:
            claims[name] = PoolClaim(count=count)
    locks = sorted(set(locks))

    problem = check_claim(claims, locks, config.pools, config.defaults.vram) if check else None
    if problem is not None:
        raise ClaimError(problem)
    return claims, locks


def _gpu_count(value: str | int) -> int:
    try:
        count = int(str(value).strip())
    except ValueError:
        raise ClaimError(
            f"--gpu takes a whole number of devices, and `{visible(str(value))}` is "
            "not one"
        ) from None
    if count < 0:
        raise ClaimError(f"--gpu takes 0 or more devices, and it is {count}")
    return count


def _size_option(value: str | int, option: str) -> int:
    try:
        return parse_size(value, what=f"{option} value")
    except UnitError as exc:
        raise ClaimError(str(exc)) from None


def check_pool_env(
    claims: Mapping[str, PoolClaim], own_env: Mapping[str, str], config: Config
) -> None:
    """Refuse a job that sets the variable a claimed pool writes (CUDA_VISIBLE_DEVICES).

    qex writes that variable with the devices it assigns; a value from [env] or --env would
    disagree with the assignment. A value merely inherited from the shell is fine: the
    supervisor replaces it.
    """
    for name in claims:
        pool = config.pool(name)
        if pool is not None and pool.env and pool.env in own_env:
            raise ClaimError(
                f"the job claims the pool `{name}` and also sets {pool.env} itself; qex writes "
                f"{pool.env} with the devices it gives the job, so the two would disagree; "
                f"remove {pool.env} from --env and [env]"
            )
