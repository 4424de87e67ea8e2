"""The only place that runs Slurm's programs. Every call has a time limit, and a failure is
a `SlurmError` whose text says which command failed and what it printed.

The coordinator calls the async functions on its event loop (a slow controller never stalls
the other commands); `partitions_now` is synchronous because a submission is answered at
once, and it runs once per coordinator.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Sequence

from qex.engine.slurm import mapping

#: A controller that does not answer makes every client wait about 9 s before it fails.
CALL_TIMEOUT_SECS = 30.0


class SlurmError(RuntimeError):
    """A Slurm command failed; the message is one sentence for a person."""


def _program(name: str) -> str:
    """`QEX_SLURM_BIN` names a directory with the programs (tests, unusual installs)."""
    where = os.environ.get("QEX_SLURM_BIN")
    return os.path.join(where, name) if where else name


def _failure(argv: Sequence[str], code: int | None, err: str) -> SlurmError:
    said = " ".join(err.split())[-300:] or "nothing"
    status = f"exit status {code}" if code is not None else "no answer, or no exit status"
    return SlurmError(f"`{' '.join(argv[:2])}` failed ({status}) and said: {said}")


#: The command runs under `sh`, which reports its exit status as the last line of stderr:
#: the coordinator reaps every child of its own (`waitpid(-1)`), so the status of a direct
#: child could be collected by the reaper before the caller sees it.
_WRAPPER = '"$@"; echo "qex-exit-status $?" >&2'
_STATUS_MARK = "qex-exit-status "


def run_sync(argv: Sequence[str], *, timeout: float = CALL_TIMEOUT_SECS) -> str:
    """Run one Slurm command; its standard output, or SlurmError."""
    full = ["/bin/sh", "-c", _WRAPPER, "qex-slurm", _program(argv[0]), *argv[1:]]
    try:
        proc = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        raise SlurmError(f"qex could not run `{argv[0]}` ({exc.strerror or exc})") from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.communicate()
        raise _failure(argv, None, "") from None
    text = err.decode("utf-8", "replace")
    lines = text.rstrip("\n").split("\n")
    code: int | None = None
    if lines and lines[-1].startswith(_STATUS_MARK):
        try:
            code = int(lines[-1][len(_STATUS_MARK):])
        except ValueError:
            code = None
        lines = lines[:-1]
    said = "\n".join(lines)
    if code == 127 and not out:
        raise SlurmError(f"qex could not run `{argv[0]}`: {' '.join(said.split())[-200:]}; "
                         "install Slurm's client programs or put them on PATH")
    if code != 0:
        raise _failure(argv, code, said)
    return out.decode("utf-8", "replace")


async def run(argv: Sequence[str], *, timeout: float = CALL_TIMEOUT_SECS) -> str:
    """`run_sync` in a worker thread, so a slow controller never stalls the coordinator."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, lambda: run_sync(argv, timeout=timeout))


async def sbatch(args: Sequence[str], script: str) -> str:
    """Submit the batch script at this path; Slurm's job id."""
    out = await run(["sbatch", *args, script])
    try:
        return mapping.parse_job_id(out)
    except ValueError as exc:
        raise SlurmError(str(exc)) from None


async def release(slurm_id: str) -> None:
    await run(["scontrol", "release", slurm_id])


async def set_dependency(slurm_id: str, dependency: str) -> None:
    await run(["scontrol", "update", f"JobId={slurm_id}", f"Dependency={dependency}"])


async def scancel(slurm_id: str, signal_name: str | None = None) -> None:
    argv = ["scancel"]
    if signal_name:
        argv += ["--full", f"--signal={signal_name}"]
    await run([*argv, slurm_id])


async def squeue(slurm_ids: Sequence[str]) -> dict[str, mapping.SlurmJob]:
    """One call for all the jobs; a job Slurm no longer knows is simply absent."""
    if not slurm_ids:
        return {}
    argv = ["squeue", "-h", "-t", "all", "-o", mapping.SQUEUE_FORMAT,
            "-j", ",".join(slurm_ids)]
    try:
        return mapping.parse_squeue(await run(argv))
    except SlurmError as exc:
        if "Invalid job id" in str(exc):
            return {}  # none of them is known any more
        raise


async def ids_named(name: str) -> list[str]:
    """The ids of the jobs with this name that Slurm still knows."""
    out = await run(["squeue", "-h", "-t", "all", "-n", name, "-o", "%i|%T"])
    return [line.split("|")[0] for line in out.splitlines()
            if line.strip() and line.split("|")[-1].strip() in mapping.PENDING_STATES]


def partitions_now(timeout: float = CALL_TIMEOUT_SECS) -> list[mapping.Partition]:
    """The partitions, read once with `sinfo` (synchronous)."""
    return mapping.parse_partitions(run_sync(["sinfo", "-h", "-o", mapping.SINFO_FORMAT],
                                             timeout=timeout))
