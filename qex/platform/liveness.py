"""Gather the facts that `qex.core.recovery_rule` judges, for one active record.

A pid in a record is trusted only with the same boot id AND the same start token AND not a
zombie (`qex.platform.procs`): pids are reused, and where PID 1 does not reap orphans an
exited process stays a zombie that still answers `kill(pid, 0)`. When the boot differs,
nothing is even looked up: a pid from an earlier boot names some other process now.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from qex.core.recovery_rule import LOCK_FREE, LOCK_MISSING, Facts
from qex.platform import procs


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def observe(record: Mapping[str, Any], pid_file: tuple[int | None, str | None, bool],
            boot_id: str | None = None, lock: str | None = None) -> Facts:
    """Facts for `record` (a status record as a dict); `pid_file` is the job directory's
    `supervisor.pid` as (pid, token, exists), which names the supervisor until its first write.

    `lock` is what `qex.store.jobs.supervisor_lock` found (None: not probed). Free: once the
    record names its supervisor, that supervisor held the lock, so a free lock means it ended
    even where a reused pid passes the start-time test. Missing: a supervisor named in
    `supervisor.pid` that is gone never passed its go (it takes the lock first), so the job
    was never launched; its coordinator stopped between the name and the go.
    """
    recorded_boot = _text(record.get("boot_id"))
    same_boot = recorded_boot is None or recorded_boot == (boot_id or procs.boot_id())
    pid = _int(record.get("pid"))
    job_alive = bool(
        same_boot and pid and procs.leads_group(pid)
        and procs.same_process(pid, _text(record.get("pid_start_token")))
    )
    sup_pid, sup_token = supervisor_of(record, pid_file)
    wrote_record = _int(record.get("supervisor_pid")) is not None
    supervisor_alive = bool(
        same_boot and sup_pid and not (wrote_record and lock == LOCK_FREE)
        and procs.same_process(sup_pid, sup_token)
    )
    launched = wrote_record or (pid_file[2] and (supervisor_alive or lock != LOCK_MISSING))
    return Facts(same_boot=same_boot, supervisor_alive=supervisor_alive, job_alive=job_alive,
                 launched=launched)


def supervisor_of(record: Mapping[str, Any], pid_file: tuple[int | None, str | None, bool]
                  ) -> tuple[int | None, str | None]:
    """The supervisor's pid and start token, from the record or else from `supervisor.pid`."""
    file_pid, file_token, _exists = pid_file
    sup_pid = _int(record.get("supervisor_pid")) or file_pid
    sup_token = _text(record.get("supervisor_start_token")) or (
        file_token if sup_pid == file_pid else None)
    return sup_pid, sup_token
