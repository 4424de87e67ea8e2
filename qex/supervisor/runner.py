"""One job's life under its supervisor: attempts, retries, the OOM correction, the result.

From the moment the coordinator wrote `starting` until the job is final (or handed back as
`queued` after a proven OOM), this process is the only writer of status.json. Every write is
atomic and is followed by a `job_changed` note to the coordinator.

Per attempt: apply the sandbox's limits, open the capped logs, start the job, write
`running`, copy its output until it ended and its pipes closed, read the evidence, classify.
Then one of:
- `failed` with `--retries` left: the same process starts the job again in the same slot
  (after waiting while the queue is paused: the pause page promises that);
- a PROVEN memory kill with raises left and room under the budget: the claim grows by
  `[retry] growth`, the job's claim hints are rewritten, and the record goes back to the queue
  as `queued` WITHOUT the stop hook: the coordinator must admit the larger claim;
- anything else is final: the record, a learner sample for a completed run, the stop hook.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable
from enum import Enum
from signal import SIGKILL
from typing import TYPE_CHECKING

from qex.core import classify as verdicts
from qex.core.config import Config, Pool
from qex.core.records import Assignment, JobSpec, JobStatus, dropped_counts
from qex.core.states import State
from qex.core.units import format_duration
from qex.platform import chaintrace, jobprocess, procs
from qex.platform.sandbox import Evidence, Limits, Sandbox
from qex.store import jobs
from qex.store.paths import Paths
from qex.supervisor import learning, notify
from qex.supervisor.children import ChildWatch, Reaper
from qex.supervisor.logcap import CappedLog
from qex.supervisor.spawn import Child, SpawnError, prepare, spawn
from qex.supervisor.watch import watch_job

if TYPE_CHECKING:
    from qex.core.records import LogsDropped, Usage

#: Between TERM and KILL when the `--timeout` timer fires.
TERM_GRACE_SECS = 10.0
#: How long the record waits for the output pipes after the job exited.
PIPE_CLOSE_GRACE_SECS = 30.0
#: A result that could not be written is tried again after this pause, doubled each time.
SAVE_RETRY_FIRST_SECS = 0.2
SAVE_RETRY_MAX_SECS = 5.0
#: How much of its own log a job gives up (at most ROOM_TRIES times) so its record fits.
ROOM_BYTES = 256 * 1024
ROOM_TRIES = 4
#: How often a paused queue is looked at again before the next attempt. This is the one slow
#: poll of the supervisor: the pause file has no event to wait on, and a retry is not urgent.
PAUSE_RECHECK_SECS = 3.0


class Outcome(Enum):
    """How one attempt ended, as far as the loop of attempts is concerned."""

    #: The job failed and has retries left: run it again (after any queue pause).
    RETRY = "retry"
    #: The record is final (completed, failed, oom, ...): run the stop hook and exit.
    FINAL = "final"
    #: A proven OOM raised the claim: the job is queued again and the coordinator restarts it.
    REQUEUED = "requeued"


def env_seconds(name: str, default: float) -> float:
    """A duration override from the environment (tests shorten the graces), by the one rule
    of `qex.core.units`."""
    from qex.core.units import env_seconds as read

    return read(os.environ, name, default)


#: supervisor.log stops growing here: a supervisor that meets the same fault all day must not
#: fill the disk with its own lines.
SAY_LIMIT_BYTES = 256 * 1024
_said = [-1]


def say_to_new_log() -> None:
    """Descriptor 2 now writes another job's supervisor.log (a supervisor that serves again):
    count that file's size from its start, not the last one's."""
    _said[0] = -1


def say(message: str) -> None:
    """A line for supervisor.log (this process's stderr); never raises, never grows past the cap.

    Written with `os.write` on descriptor 2, not through `sys.stderr`: a text stream whose
    flush failed once (a full disk) keeps the failed bytes and raises on every later line,
    and a supervisor must outlive a full disk.
    """
    try:
        if _said[0] < 0:
            _said[0] = os.fstat(2).st_size
        if _said[0] >= SAY_LIMIT_BYTES:
            return
        data = f"qex: {message}\n".encode("utf-8", "replace")
        room = SAY_LIMIT_BYTES - _said[0]
        if len(data) > room:
            data = b"qex: this log reached its cap; later lines are not kept\n"
            _said[0] = SAY_LIMIT_BYTES
        else:
            _said[0] += len(data)
        os.write(2, data)
    except (OSError, ValueError):
        pass


def job_child(spec: JobSpec, config: Config, env: dict[str, str],
              preexec: Callable[[], None] | None) -> Child:
    """The job's process as `spawn` starts it: its command and directory, and the nice, I/O
    class and OOM score that the spec or the config's `[politeness]` give it."""
    politeness = config.politeness
    nice = spec.nice if spec.nice is not None else politeness.nice
    return Child(argv=list(spec.command), env=env, cwd=spec.cwd, nice=nice, io=politeness.io,
                 oom_score_adj=politeness.oom_score_adj, preexec=preexec)


class Runner:
    def __init__(self, paths: Paths, spec: JobSpec, status: JobStatus, config: Config, *,
                 notes: list[str], sandbox: Sandbox,
                 now: Callable[[], float] = time.time,
                 env_overrides: dict[str, str | None] | None = None) -> None:
        self.paths = paths
        self.job_dir = paths.job_dir(spec.id)
        self.spec = spec
        self.status = status
        self.config = config
        #: Sentences that stay in `error` for every attempt (a config fault).
        self.notes = notes
        self.sandbox = sandbox
        self.now = now
        #: Set (a text) or remove (None) in the job's environment on top of spec.json: an
        #: engine's allocation (Slurm's SLURM_* variables and the GPUs it gave).
        self.env_overrides = env_overrides or {}
        self.children: ChildWatch | None = None
        self.reaper = Reaper()
        self.pid: int | None = None
        self.term_grace = env_seconds("QEX_TERM_GRACE_SECS", TERM_GRACE_SECS)
        self.pipe_grace = env_seconds("QEX_PIPE_CLOSE_GRACE_SECS", PIPE_CLOSE_GRACE_SECS)
        self.pause_recheck = env_seconds("QEX_PAUSE_RECHECK_SECS", PAUSE_RECHECK_SECS)
        #: The cause of the last failed record write (said once per change), None after a success.
        self._save_fault: str | None = None
        self._room_tries = 0
        #: The coordinator answered the note of a final record: it holds the result, and
        #: watches this process for nothing more (`qex.supervisor.main.run_job`).
        self.final_noted = False

    # -- the record ----------------------------------------------------------------------

    def save(self) -> bool:
        """Write the record now (synced), then tell the coordinator; a failed write is said
        once and the job goes on (see `save_final`). True once the record is written."""
        state = self.status.state
        chaintrace.mark(f"sup.write.{state}", self.spec.id)
        try:
            record = jobs.write_status(self.job_dir, self.status)
        except OSError as exc:
            cause = disk_cause(exc)
            if cause != self._save_fault:
                self._save_fault = cause
                say(f"qex could not write the record of the job {self.spec.id}: {cause}")
            return False
        self._save_fault = None
        chaintrace.mark(f"sup.written.{state}", self.spec.id)
        # The record travels with the note, so the coordinator starts the next job without
        # reading the file back. Until the job is final the connection stays open for its
        # next note (`notify._kept` says why).
        answered = notify.job_changed(self.paths.socket_path, self.spec.id, record=record,
                                      keep=not self.status.final)
        self.final_noted = answered and self.status.final
        chaintrace.mark(f"sup.noted.{state}", self.spec.id)
        return True

    def save_final(self) -> None:
        """Write a result (or a hand-back to the queue) and do not give up until it is written.

        The result exists only in this process until it is on disk: a supervisor that exits
        with it unwritten loses the job's exit code, and the next coordinator could only say
        that nothing is known. So a failed write (a full disk) is tried again with a growing
        pause, the coordinator is told what waits (it shows it, and takes the record over
        if this process dies meanwhile), and when the job's own output filled the disk, the
        newest part of its log gives up a little room (counted as dropped).
        """
        if self.status.final:
            # The result is decided and the job's processes are gone: the coordinator may
            # start the next job while this write syncs. It tells no one the result until
            # the write lands (the note after `save`), and records it itself should this
            # process die first.
            chaintrace.mark("sup.ending", self.spec.id)
            notify.job_changed(self.paths.socket_path, self.spec.id,
                               pending=self.status.to_dict(), keep=True)
        delay = SAVE_RETRY_FIRST_SECS
        while not self.save():
            cause = self._save_fault or "an unknown fault"
            if not self.job_dir.is_dir():
                say("the job's directory was deleted, so its result has nowhere to go")
                return
            if self._make_room():
                continue
            notify.job_changed(self.paths.socket_path, self.spec.id,
                               pending=self.status.to_dict(),
                               note=pending_sentence(self.status, cause))
            time.sleep(delay)
            self.reaper.reap(None)
            delay = min(delay * 2, SAVE_RETRY_MAX_SECS)

    def _make_room(self) -> bool:
        """Cut the end of this job's larger log by `ROOM_BYTES`, when its output filled the disk.

        Only when a log write of this job failed (its own output is the likely cause) and at
        most `ROOM_TRIES` times: room for a record of a few kilobytes, not a cleanup of the
        disk. What is cut is counted in `logs_dropped`.
        """
        dropped = self.status.logs_dropped
        if not dropped or not dropped.get("write_error") or self._room_tries >= ROOM_TRIES:
            return False
        self._room_tries += 1
        best: tuple[int, str] | None = None
        for name in ("stdout", "stderr"):
            try:
                size = os.stat(self.job_dir / f"{name}.log").st_size
            except OSError:
                continue
            if size and (best is None or size > best[0]):
                best = (size, name)
        if best is None:
            return False
        size, name = best
        cut = max(0, size - ROOM_BYTES)
        try:
            with open(self.job_dir / f"{name}.log", "r+b") as handle:
                handle.seek(cut)
                lines = handle.read().count(b"\n")
                handle.truncate(cut)
        except OSError:
            return False
        if name == "stdout":
            dropped["stdout_bytes"] = dropped.get("stdout_bytes", 0) + size - cut
            dropped["stdout_lines"] = dropped.get("stdout_lines", 0) + lines
        else:
            dropped["stderr_bytes"] = dropped.get("stderr_bytes", 0) + size - cut
            dropped["stderr_lines"] = dropped.get("stderr_lines", 0) + lines
        say(f"the end of {name}.log ({size - cut} bytes) was cut to make room for the record")
        return True

    def _error(self, *extra: str | None) -> str | None:
        sentences = [s for s in (*self.notes, *extra) if s]
        return ". ".join(s.rstrip(".") for s in sentences) + "." if sentences else None

    # -- the life of the job -------------------------------------------------------------

    def run(self) -> None:
        """Run attempts until the job is final or back in the queue, then the stop hook."""
        self.children = ChildWatch()
        jobprocess.become_subreaper()
        status = self.status
        status.supervisor_pid = os.getpid()
        status.supervisor_start_token = procs.start_token(os.getpid())
        status.boot_id = procs.boot_id()
        status.error = self._error()
        # No write here: the first record this supervisor writes is `running` (or the failure
        # that prevented it), moments later. Until then the coordinator's `supervisor.pid`
        # names this process, so one atomic write and one wake-up per job are saved.
        try:
            while True:
                outcome = self._attempt()
                if outcome is Outcome.RETRY:
                    self._wait_while_paused()
                    continue
                if outcome is Outcome.REQUEUED:
                    return
                break
            self.run_hook()
        finally:
            self.children.close()
            self.children = None

    def run_hook(self) -> None:
        from qex.supervisor.hook import run_stop_hook

        try:
            run_stop_hook(self.paths, self.spec.id, origin="supervisor",
                          children=self.children, reaper=self.reaper)
        except Exception as exc:  # the hook must never cost the job its result
            say(f"the stop hook failed inside qex: {exc!r}")

    def abort(self, exc: BaseException) -> None:
        """A fault inside the supervisor: stop the job, record why, keep the result honest."""
        import traceback

        say("the supervisor met an internal fault:\n" + "".join(traceback.format_exception(exc)))
        stopped = ""
        if self.pid is not None and procs.same_process(self.pid, self.status.pid_start_token):
            procs.signal_group(self.pid, SIGKILL)
            stopped = ", so qex stopped the job"
        status = self.status
        if status.final:
            return
        status.state = State.FAILED
        status.finished_at = self.now()
        if status.pid is not None:
            status.last_pid = status.pid
        status.pid = None
        status.pid_start_token = None
        status.error = self._error(
            f"the supervisor of this job failed inside qex ({type(exc).__name__}: {exc}){stopped}; "
            "this is a fault in qex, and supervisor.log in the job's directory shows where"
        )
        self.save_final()
        self.run_hook()

    # -- one attempt ---------------------------------------------------------------------

    def _limits(self) -> Limits:
        """The limits of `[enforce] mode` for the claim in force (it grows after an OOM)."""
        from qex.platform.select import limits_for

        enforce = self.config.enforce
        return limits_for(enforce.mode, self.status.mem, enforce.mem_overcommit)

    def _job_env(self) -> dict[str, str]:
        from qex.core.pools import job_env_for_assignment

        env = dict(self.spec.env)
        for name, raw in sorted(self.status.assigned.items()):
            assignment = Assignment(units=int(raw.get("units", 0)),
                                    devices=[int(d) for d in raw.get("devices") or []],
                                    size=raw.get("size"))
            pool = self.config.pool(name)
            if pool is None:
                # The config changed or could not be read; still tell the job what it holds.
                if assignment.devices:
                    pool = Pool(name=name, devices=(0,) * (max(assignment.devices) + 1),
                                env="CUDA_VISIBLE_DEVICES" if name == "gpu" else None)
                else:
                    pool = Pool(name=name, count=max(1, assignment.units))
            env.update(job_env_for_assignment(pool, assignment))
        for key, value in self.env_overrides.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    def _child(self) -> Child:
        """What to start for this attempt (asked after the sandbox's `begin_attempt`)."""
        return job_child(self.spec, self.config, self._job_env(), self.sandbox.child_preexec())

    def _open_logs(self, number: int) -> tuple[CappedLog, CappedLog]:
        """The logs of attempt `number`: the first truncates them, a later one marks where
        it begins (said by `number`, since the record may count the attempt already)."""
        first = number == 1
        limit = self.config.logs.max_bytes
        logs = []
        for name in ("stdout", "stderr"):
            size, lines = dropped_counts(self.status.logs_dropped, name)
            log = CappedLog(self.job_dir / f"{name}.log", limit, truncate=first,
                            dropped_bytes=size, dropped_lines=lines, report=say)
            if not first:
                log.begin_attempt(number)
            logs.append(log)
        return logs[0], logs[1]

    def _attempt(self) -> Outcome:  # noqa: PLR0915 (the steps of one attempt, in order)
        status, spec = self.status, self.spec
        assert self.children is not None
        number = status.attempts + 1
        status.error = self._error()
        try:
            os.unlink(self.job_dir / jobs.KILLED_MARK)
        except OSError:
            pass
        limits = self._limits()
        try:
            self.sandbox.begin_attempt(limits)
        except Exception as exc:
            say(f"the sandbox refused the limits {limits}: {exc!r}")
            return self._not_started(
                f"qex could not apply the memory limit of `[enforce] mode` = \"{limits.mode}\" "
                f"to this job ({exc}), so it did not start it; run `qex config show` to see the "
                "state of enforcement, or set `[enforce] mode` = \"off\""
            )
        chaintrace.mark("sup.attempt", spec.id)
        status.enforcement = self.sandbox.describe()
        child = self._child()
        # The log files are opened after the exec where nothing else would overlap the
        # spawn: two file creations (0.04 ms, or up to 0.9 ms while the file system still
        # remembers inodes freed a moment ago) leave the path from the go to the job's
        # exec, and the job's first output waits in the pipes, which are read only once
        # both files are open. A spawner thread started just now sets itself up while the
        # logs open instead. A log that cannot be opened never stopped a job (`CappedLog`
        # records why the output is missing), so the order changes no outcome.
        logs = None if prepare(child) else self._open_logs(number)
        _, cpu_before = jobprocess.children_usage()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        chaintrace.mark("sup.spawn", spec.id)
        try:
            pid = spawn(child, out_w, err_w)
        except SpawnError as exc:
            for fd in (out_r, err_r):
                os.close(fd)
            for log in logs or self._open_logs(number):
                log.finish()
            return self._not_started(exc.sentence)
        finally:
            os.close(out_w)
            os.close(err_w)
        chaintrace.mark("sup.exec", spec.id)
        self.pid = pid
        pidfd = jobprocess.pidfd_open(pid)
        status.state = State.RUNNING
        status.pid = pid
        status.pid_start_token = procs.start_token(pid)
        status.started_at = self.now()
        status.finished_at = None
        status.exit_code = None
        status.signal = None
        status.attempts = number
        # After the job's pid and start time are known (a fault from here on stops the job,
        # see `abort`), before `running` is written.
        out_log, err_log = logs or self._open_logs(number)
        self.save()
        try:
            watched = watch_job(pid, {out_r: out_log, err_r: err_log}, timeout=spec.timeout,
                                term_grace=self.term_grace, pipe_grace=self.pipe_grace,
                                children=self.children, reaper=self.reaper, pidfd=pidfd,
                                wall=self.now)
        finally:
            if pidfd is not None:
                os.close(pidfd)
            out_log.finish()
            err_log.finish()
        chaintrace.mark("sup.ended", spec.id)
        self.pid = None
        finished = watched.ended_at
        try:
            evidence = self.sandbox.evidence()
        except Exception as exc:
            say(f"the sandbox gave no evidence for this attempt: {exc!r}")
            evidence = Evidence()
        # The CPU is a difference, right however many jobs this process served; the peak
        # is the reaper's, for the processes of this job alone.
        _, cpu_after = jobprocess.children_usage()
        max_rss = self.reaper.peak_rss
        exit_code = os.WEXITSTATUS(watched.status) if os.WIFEXITED(watched.status) else None
        signal = os.WTERMSIG(watched.status) if os.WIFSIGNALED(watched.status) else None
        end = verdicts.AttemptEnd(
            exit_code=exit_code, signal=signal, timed_out=watched.timed_out,
            killed_by_user=(self.job_dir / jobs.KILLED_MARK).exists(),
            oom_kills=evidence.oom_kills, oom_proven=evidence.proven, oom_source=evidence.source,
        )
        verdict = verdicts.classify(end, claim=status.mem, timeout=spec.timeout)
        status.usage = self._usage(evidence, max_rss, cpu_after - cpu_before)
        status.logs_dropped = self._logs_dropped(out_log, err_log, watched.incomplete)
        incomplete = self._incomplete_sentence() if watched.incomplete else None
        status.exit_code, status.signal, status.finished_at = exit_code, signal, finished
        status.last_pid, status.pid, status.pid_start_token = pid, None, None
        if verdict.state == State.FAILED and status.retries_left > 0:
            status.retries_left -= 1
            status.finished_at = None
            retry = verdicts.retry_sentence(number, exit_code, signal)
            status.error = self._error(incomplete, retry)
            self.save()
            return Outcome.RETRY
        if verdict.state == State.OOM and verdict.oom_evidence == "cgroup":
            return self._after_proven_oom(number, incomplete, finished)
        status.state = verdict.state
        status.oom_evidence = verdict.oom_evidence
        status.error = self._error(incomplete, self._lost_output_sentence(), verdict.error)
        self.save_final()
        if verdict.state == State.COMPLETED and self.config.learn.enabled:
            learning.record_completed(self.paths, spec, status, finished)
        return Outcome.FINAL

    def _after_proven_oom(self, attempt: int, incomplete: str | None,
                          finished: float) -> Outcome:
        """Learn the lower bound, then raise the claim and requeue, or stay `oom`."""
        from qex.platform.machine import machine
        from qex.supervisor.oom import after_proven_oom

        if self.config.learn.enabled:
            learning.record_oom_kill(self.paths, self.spec, self.status, finished)
        sentence = after_proven_oom(self.spec, self.status, self.config, self.job_dir,
                                    attempt=attempt, budget=self.config.mem_budget(machine()))
        self.status.error = self._error(incomplete, self._lost_output_sentence(), sentence)
        self.save_final()
        return Outcome.REQUEUED if self.status.state is State.QUEUED else Outcome.FINAL

    def _not_started(self, sentence: str) -> Outcome:
        """The attempt could not start: `failed` with no exit code, and no retry."""
        status = self.status
        status.state = State.FAILED
        status.finished_at = self.now()
        status.exit_code = None
        status.signal = None
        status.error = self._error(sentence)
        self.save_final()
        return Outcome.FINAL

    # -- after an attempt ----------------------------------------------------------------

    def _usage(self, evidence: Evidence, max_rss: int, cpu_secs: float) -> Usage:
        if evidence.peak:
            usage: Usage = {"max_rss": int(evidence.peak), "source": "memory.peak"}
        else:
            usage = {"max_rss": max_rss, "source": "rusage"}
        usage["cpu_secs"] = round(max(0.0, cpu_secs), 3)
        usage["orphans_reaped"] = self.reaper.orphans
        if evidence.pressure is not None:
            usage["pressure"] = evidence.pressure
        return usage

    def _logs_dropped(self, out: CappedLog, err: CappedLog,
                      incomplete: bool) -> LogsDropped | None:
        before = self.status.logs_dropped or {}
        write_error = out.write_error or err.write_error or before.get("write_error")
        if not (out.dropped_bytes or err.dropped_bytes or out.dropped_lines or err.dropped_lines
                or incomplete or before.get("incomplete") or write_error):
            return None
        return {
            "write_error": write_error,
            "stdout_bytes": out.dropped_bytes, "stdout_lines": out.dropped_lines,
            "stderr_bytes": err.dropped_bytes, "stderr_lines": err.dropped_lines,
            "limit": self.config.logs.max_bytes or 0,
            "incomplete": incomplete or bool((self.status.logs_dropped or {}).get("incomplete")),
        }

    def _lost_output_sentence(self) -> str | None:
        """Said when output was dropped because a log could not be written (not the cap)."""
        cause = (self.status.logs_dropped or {}).get("write_error")
        if not cause:
            return None
        return (f"qex could not write all of the job's output to its log files ({cause}), so "
                "part of it is missing; `logs_dropped` in the record counts what was lost")

    def _incomplete_sentence(self) -> str:
        return (
            "a process that the job started kept its output open after the job ended, so qex "
            f"stopped reading after {format_duration(self.pipe_grace)} and a log file may miss "
            "its last part; give such a process an output of its own (for example "
            "`setsid my-daemon > daemon.log 2>&1 &`)"
        )

    def _wait_while_paused(self) -> None:
        """Before a retry: a paused queue starts nothing, and that includes a next attempt."""
        from qex.store.pause import read_pause

        announced = False
        while True:
            record = read_pause(self.paths.paused_file, self.now()).queue
            if record is None or (record.until is not None and record.until <= self.now()):
                return
            if not announced:
                announced = True
                self.status.error = self._error(
                    self.status.error,
                    "the queue is paused, so the next attempt waits until `qex resume queue`",
                )
                self.save()
            time.sleep(self.pause_recheck)
            self.reaper.reap(None)


def disk_cause(exc: OSError) -> str:
    """A failed write in words: `the disk is full` for the causes a person can act on."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk is full"
    return exc.strerror or str(exc)


def pending_sentence(status: JobStatus, cause: str) -> str:
    """What the coordinator shows while a result waits to be written."""
    if status.state == State.QUEUED.value:
        ended = "the job goes back to the queue"
    elif status.exit_code is not None:
        ended = f"the job stopped with {status.exit_code}"
    elif status.signal is not None:
        ended = f"the job was ended by signal {status.signal}"
    else:
        ended = f"the job is {status.state}"
    if cause == "the disk is full":
        return f"{ended}; qex waits for disk space to record it"
    return f"{ended}; qex could not record it yet ({cause}) and tries again"
