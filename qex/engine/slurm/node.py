"""The program the batch script runs on the node: `python -m qex.engine.slurm.node <id>`.

1. Read the job's records from the shared state directory. Run only a record that is
   `queued` for Slurm with THIS allocation's id (`SLURM_JOB_ID`): an old or foreign
   allocation never runs a job twice.
2. Write `starting` (the coordinator wrote `queued`; from here the node is the writer).
3. Catch SIGTERM: Slurm sends it for scancel, the time limit and preemption. The handler
   writes the `killed-by-user` mark (so the end is `killed`, not a crash) and passes the
   signal to the job's group; the supervisor then records the end as usual. Slurm's KILL
   follows after its KillWait.
4. Run qex's own supervisor with the Slurm sandbox (the allocation's cgroup as evidence).
5. Exit 0 only when the record is `completed`, so Slurm's `afterok` means qex's `needs`.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from qex.core.config import Config
from qex.core.names import is_uuid
from qex.core.states import Exit, State
from qex.store import jobs
from qex.store.paths import PathError, Paths

#: The sentence a job stopped through Slurm (not `qex kill`) gets in its record.
SLURM_STOP = "Slurm stopped this job while it ran"
#: The exit status when this program refuses to run the job (qex's band).
REFUSED = Exit.QEX_FAILED


def say(message: str) -> None:
    print(f"qex (Slurm node): {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or not is_uuid(args[0]):
        say("usage: python -m qex.engine.slurm.node <job-id>")
        return 2
    job_id = args[0].lower()
    slurm_id = os.environ.get("SLURM_JOB_ID", "")
    try:
        paths = Paths.from_env()
    except PathError as exc:
        say(str(exc))
        return REFUSED
    job_dir = paths.job_dir(job_id)
    status = jobs.read_status(job_dir)
    if status is None or jobs.read_spec(job_dir) is None:
        say(f"the job {job_id} has no readable record in {job_dir}; is the state directory "
            "shared with this node at the same path? Nothing was started")
        return REFUSED
    if status.engine != "slurm" or status.state != State.QUEUED.value or (
            status.engine_id != slurm_id):
        say(f"the job {job_id} is `{status.state}` for Slurm job {status.engine_id}, not "
            f"queued for this allocation ({slurm_id or 'no SLURM_JOB_ID'}); nothing was started")
        return REFUSED
    from qex.platform import procs

    status.state = State.STARTING
    status.started_at = time.time()
    status.finished_at = None
    status.blocked_reason = None
    status.blocked_since = None
    status.boot_id = procs.boot_id()
    try:
        jobs.write_status(job_dir, status)
    except OSError as exc:
        say(f"qex could not write the record in {job_dir}: {exc}; nothing was started")
        return REFUSED
    notes: list[str] = []
    _catch_term(job_dir, notes, slurm_id)

    from qex.engine.slurm.sandbox import SlurmSandbox
    from qex.supervisor.main import supervise

    def sandbox(_job_id: str, _config: Config) -> SlurmSandbox:
        return SlurmSandbox.for_allocation(slurm_id)

    from qex.engine.slurm.mapping import allocation_env, node_exit_status

    supervise(paths, job_id, open_sandbox=sandbox, notes=notes,
              env_overrides=allocation_env(os.environ))
    final = jobs.read_status(job_dir)

    return node_exit_status(final.state if final is not None else "")


def _catch_term(job_dir: Path, notes: list[str], slurm_id: str) -> None:
    def on_term(signum: int, frame: FrameType | None) -> None:
        mark = job_dir / jobs.KILLED_MARK
        try:
            fd = os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            os.write(fd, b"slurm\n")
            os.close(fd)
            if not notes or SLURM_STOP not in notes[-1]:
                notes.append(f"{SLURM_STOP} (Slurm job {slurm_id}): scancel or an "
                             "administrator, its time limit, or preemption; `scontrol show job "
                             f"{slurm_id}` says which while Slurm remembers the job")
        except OSError:
            pass  # qex kill wrote it already: a person stopped it through qex
        record = jobs.read_status(job_dir)
        pid = record.pid if record is not None else None
        if pid:
            try:
                os.killpg(pid, signal.SIGTERM)
            except OSError:
                pass

    signal.signal(signal.SIGTERM, on_term)


if __name__ == "__main__":
    sys.exit(main())
