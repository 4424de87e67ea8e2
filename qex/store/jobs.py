"""Job directories: `jobs/<uuid>/` with spec.json, status.json, the logs and marker files."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from qex.core.names import ID_CHARS, is_uuid
from qex.core.records import JobSpec, JobStatus
from qex.core.recovery_rule import LOCK_FREE, LOCK_HELD, LOCK_MISSING
from qex.store import atomic
from qex.store.paths import Paths

SPEC = "spec.json"
STATUS = "status.json"
STDOUT = "stdout.log"
STDERR = "stderr.log"
SUPERVISOR_LOG = "supervisor.log"
SUPERVISOR_PID = "supervisor.pid"
#: Held with flock (exclusive) by a job's supervisor from before its first write to its end.
SUPERVISOR_LOCK = "supervisor.lock"
KILLED_MARK = "killed-by-user"
HOOK_RAN = "hook.ran"
HOOK_LOG = "hook.log"


def open_supervisor_log(job_dir: Path) -> int:
    """A descriptor that appends to the job's supervisor.log (made 0600), for a supervisor
    that learns its job only once it runs (a fork server's child, a standby): it becomes
    that process's stdout and stderr. Raises OSError."""
    return os.open(job_dir / SUPERVISOR_LOG,
                   os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)


def create_job_dir(paths: Paths, job_id: str) -> Path:
    paths.jobs_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(paths.jobs_dir, 0o700)
    job_dir = paths.job_dir(job_id)
    job_dir.mkdir(mode=0o700)
    os.chmod(job_dir, 0o700)
    return job_dir


def write_spec(job_dir: Path, spec: JobSpec) -> None:
    atomic.write_json(job_dir / SPEC, spec.to_dict(), mode=0o600)


def create_job(paths: Paths, spec: JobSpec, status: JobStatus) -> Path:
    """A new job on disk, durable when this returns: its directory, `spec.json` and the first
    `status.json`. Four fsyncs and no more: the two files' data (side by side), then the job
    directory (both names) once, then the jobs directory (the new directory's name), without
    which a power cut could lose a job whose id was already given out. On OSError nothing of
    the job is left (an existing directory of the same id, EEXIST, is not touched)."""
    staged = stage_job(paths, spec, status)
    commit_jobs(paths, [staged])
    return staged.job_dir


class StagedJob:
    """A new job's directory with its two files written under temp names, not yet synced
    nor renamed (`stage_job`); `commit_jobs` makes a batch of them durable at once."""

    __slots__ = ("files", "job_dir")

    def __init__(self, job_dir: Path, files: list[tuple[str, str]]) -> None:
        self.job_dir = job_dir
        self.files = files


def stage_job(paths: Paths, spec: JobSpec, status: JobStatus) -> StagedJob:
    """The first half of `create_job`: the job's directory, and both files under temp names.
    Nothing of it is a job yet: recovery passes over a directory without `spec.json` and
    `status.json`. On OSError nothing of the job is left (an existing directory of the same
    id, EEXIST, is not touched)."""
    job_dir = create_job_dir(paths, spec.id)
    try:
        files = atomic.stage_files([(job_dir / SPEC, atomic.json_bytes(spec.to_dict())),
                                    (job_dir / STATUS, atomic.json_bytes(status.to_dict()))])
    except OSError:
        remove_job_dir(job_dir)
        raise
    return StagedJob(job_dir, files)


def commit_jobs(paths: Paths, staged: list[StagedJob]) -> None:
    """Make staged jobs durable: every file's data side by side, the renames, then every job
    directory and the jobs directory side by side (the syncs of a batch share journal
    commits). On OSError every job of the batch is removed, and the error raised."""
    try:
        atomic.commit_files([pair for job in staged for pair in job.files])
        atomic.fsync_dirs([*(job.job_dir for job in staged), paths.jobs_dir])
    except OSError:
        for job in staged:
            remove_job_dir(job.job_dir)
        raise


def read_spec(job_dir: Path) -> JobSpec | None:
    data = atomic.read_json(job_dir / SPEC)
    if not isinstance(data, dict):
        return None
    try:
        return JobSpec.from_dict(data)
    except (TypeError, ValueError):
        return None


def write_status(job_dir: Path, status: JobStatus, *, sync_dir: bool = True) -> dict[str, Any]:
    """Replace the record (temp file, fsync, rename, fsync of the directory); returns what was
    written, which the supervisor sends along with its note. `sync_dir=False` leaves the
    rename to the next journal commit (see `Coordinator.write`)."""
    record = status.to_dict()
    atomic.write_json(job_dir / STATUS, record, mode=0o600, sync_dir=sync_dir)
    return record


def write_statuses(items: list[tuple[Path, JobStatus]]) -> None:
    """`write_status` for several jobs at once, their syncs side by side: every record
    staged, the files' data synced together and renamed, then the job directories synced
    together. Records written one after another each waited for a sync of their own (a
    person's cancel of a large group, about 1 ms a job on this machine's disk).

    Raises OSError with every record as it was when a write or a sync fails, the usual
    case (a full disk, a failing device): nothing is renamed before every file's data is on
    the disk. Only a rename that fails after others went through (which no local file
    system does for a file beside its target) leaves those others written."""
    staged = atomic.stage_files([(job_dir / STATUS, atomic.json_bytes(status.to_dict()))
                                 for job_dir, status in items])
    atomic.commit_files(staged)
    atomic.fsync_dirs([job_dir for job_dir, _status in items])


def read_status(job_dir: Path) -> JobStatus | None:
    data = atomic.read_json(job_dir / STATUS)
    if not isinstance(data, dict):
        return None
    try:
        return JobStatus.from_dict(data)
    except (TypeError, ValueError):  # a field missing, or a state this qex does not know
        return None


def damaged_file(job_dir: Path, spec: JobSpec | None, record: JobStatus | None) -> Path | None:
    """The file that makes a job directory DAMAGED, given what `read_spec` and `read_status`
    gave: its record (unreadable, or another job's), else its spec; None when both are whole.
    Recovery keeps no job for such a directory, and every command names it so."""
    if record is None or record.id != job_dir.name:
        return job_dir / STATUS
    if spec is None:
        return job_dir / SPEC
    return None


def damaged_dirs(paths: Paths, word: str) -> dict[str, str]:
    """{id: path of the broken file} of the job directories that `word` names as an id or a
    short one (8 characters or more) and that are DAMAGED (`damaged_file`: recovery keeps no
    job for them); else empty. Asked only for a word that named no record: the directory is
    then all that is left of the job."""
    lowered = word.strip().lower()
    if len(lowered) < 8 or not ID_CHARS.issuperset(lowered):
        return {}
    try:
        names = [lowered] if is_uuid(lowered) else [
            name for name in os.listdir(paths.jobs_dir) if name.startswith(lowered)]
    except OSError:
        return {}
    found: dict[str, str] = {}
    for name in names:
        job_dir = paths.job_dir(name)
        if is_uuid(name) and job_dir.is_dir():
            broken = damaged_file(job_dir, read_spec(job_dir), read_status(job_dir))
            if broken is not None:
                found[name] = str(broken)
    return found


def iter_job_dirs(paths: Paths) -> Iterator[Path]:
    try:
        entries = list(os.scandir(paths.jobs_dir))
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and is_uuid(entry.name):
            yield Path(entry.path)


def remove_job_dir(job_dir: Path) -> None:
    import shutil  # only deletions need it; the supervisor imports this module and never does

    shutil.rmtree(job_dir, ignore_errors=True)


def read_supervisor_pid_file(job_dir: Path) -> tuple[int | None, str | None, bool]:
    """(pid, start token, file exists) from `supervisor.pid` (`"<pid> <token>"`)."""
    try:
        text = (job_dir / SUPERVISOR_PID).read_text()
    except FileNotFoundError:
        return None, None, False
    except OSError:
        return None, None, True
    parts = text.split()
    pid: int | None = None
    token: str | None = None
    if parts and parts[0].isdigit():
        pid = int(parts[0])
        token = parts[1] if len(parts) > 1 else None
    return pid, token, True


def supervisor_lock(job_dir: Path) -> str:
    """What `supervisor.lock` says of the job's supervisors, as `recovery_rule.LOCK_MISSING`,
    `LOCK_FREE` or `LOCK_HELD`.

    Pid and start time can mistake a reused pid for the supervisor (the portable start time
    has one-second steps); a lock dies with its holder. The probe takes a shared lock for an
    instant; a supervisor that starts at that instant tries again (`qex.supervisor.main`).
    """
    import fcntl

    try:
        fd = os.open(job_dir / SUPERVISOR_LOCK, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        return LOCK_MISSING
    except OSError:
        return LOCK_HELD
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return LOCK_HELD
    else:
        return LOCK_FREE
    finally:
        os.close(fd)


def supervisor_lock_free(job_dir: Path) -> bool:
    """True when `supervisor.lock` exists and no process holds it: the supervisor that took
    it has ended, whatever process its recorded pid names now."""
    return supervisor_lock(job_dir) == LOCK_FREE


def forget_supervisor_lock(job_dir: Path) -> None:
    """Remove a `supervisor.lock` that nobody holds, when the job goes back to the queue.

    The next start of the job then begins as the first did, with no lock on the disk, and
    recovery can tell a supervisor that never passed its go (no lock) from one that ran the
    job and died (`recovery_rule.LOCK_MISSING`). A lock that is held stays: the file is
    removed only while this process holds it itself, so no supervisor loses a lock it has.
    """
    import fcntl

    try:
        fd = os.open(job_dir / SUPERVISOR_LOCK, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.unlink(job_dir / SUPERVISOR_LOCK)
    except OSError:
        pass  # held by a supervisor, or gone already
    finally:
        os.close(fd)


def supervisor_log_tail(job_dir: Path, lines: int = 3, limit: int = 400) -> str | None:
    """The last non-empty lines of supervisor.log joined with ' / ', for an error sentence."""
    try:
        with open(job_dir / SUPERVISOR_LOG, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - 16384))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    from qex.core.names import printable_line

    kept = [printable_line(line).strip() for line in text.splitlines() if line.strip()][-lines:]
    if not kept:
        return None
    joined = " / ".join(kept)
    return joined if len(joined) <= limit else "..." + joined[-limit:]


def mark_killed(job_dir: Path, signum: int) -> None:
    """Leave the mark that tells the supervisor (or the Slurm node program) that a person
    stopped the job with `signum`, so its record says so and not "crashed". Raises OSError."""
    fd = os.open(job_dir / KILLED_MARK, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC,
                 0o600)
    try:
        os.write(fd, f"{signum}\n".encode())
    finally:
        os.close(fd)
