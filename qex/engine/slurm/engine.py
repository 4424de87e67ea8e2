"""The coordinator's side of the Slurm engine: submit, watch, stop, and record what Slurm did.

Where it runs: inside the coordinator (docs/slurm.md). A job for Slurm never enters the
local queue: qex's budget, peers and pools do not apply, because admission is Slurm's. The
coordinator still holds its record, its waiters and its events, so every command works by
the same qex id.

The life of one job:
1. submit: the claim is checked once against the partitions (`sinfo`, read once per
   coordinator); a claim no partition can hold is refused with the reason.
2. The watcher writes the batch script into the job directory and calls `sbatch --hold`,
   writes Slurm's id into the record, then `scontrol release`: the node never reads a record
   without the id. Dependencies become `--dependency=afterok/afterany` on Slurm's ids; a
   dependency that is not in Slurm yet (a local job, or one not yet submitted) is waited for
   here.
3. On the node, `qex.engine.slurm.node` makes the record `starting` and runs qex's own
   supervisor, which writes `running` and the final record into the shared state directory.
4. The watcher looks at Slurm with ONE `squeue` for all its jobs per `[engine] poll`: a
   pending job's reason becomes the record's reason in qex's words; a job that Slurm ended
   gets the supervisor's record, or, when there is none (node failure, preemption, time
   limit, scancel from outside), a record that says what Slurm did. A supervisor that raised
   the claim after a proven OOM hands the record back as `queued`, and the watcher submits
   it again with the larger claim, by the same qex id.
5. `DependencyNeverSatisfied`: a dependent whose needed job did not complete is recorded as
   `skipped` (126), as on one machine, and taken out of Slurm's queue with `scancel`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qex.coordinator.log import log, log_exception
from qex.coordinator.state import label
from qex.core import protocol
from qex.core import wait_reasons as words
from qex.core.model import dataclass
from qex.core.states import State
from qex.engine.slurm import commands, mapping
from qex.store import atomic
from qex.store import jobs as job_files

if TYPE_CHECKING:
    from qex.coordinator.state import Coordinator, Job
    from qex.core.records import JobSpec, PoolClaimPart

#: The batch script and Slurm's own output of it, in the job directory.
SCRIPT_FILE = "slurm.sh"
OUTPUT_FILE = "slurm.out"
#: After `sinfo` failed, submissions are refused with that answer for this long.
SINFO_RETRY_SECS = 30.0
#: Words in a Slurm error that mean "try again later", not "this job is wrong".
TRANSIENT = ("timed out", "Unable to contact", "Socket", "try again", "Resource temporarily")


@dataclass(frozen=True)
class DepPlan:
    """`go` (to Slurm, with these dependencies), `wait` (here, for `text`), or `skip`."""

    kind: str
    text: str | None
    root: str | None = None
    afterok: tuple[str, ...] = ()
    afterany: tuple[str, ...] = ()


class SlurmEngine:
    kind = "slurm"

    def __init__(self, coord: Coordinator, slurm: Any = commands, *,
                 background: bool = True) -> None:
        self.coord = coord
        #: False in tests, which call `step()` themselves.
        self.background = background
        #: The module (or a fake in tests) with sbatch/squeue/scancel/release/set_dependency.
        self.slurm = slurm
        self.partitions: list[mapping.Partition] | None = None
        #: qex id -> job, for every job of this engine that is not final.
        self.tracked: dict[str, Job] = {}
        #: qex ids waiting to be handed to Slurm, in submission order.
        self.unsubmitted: list[str] = []
        #: qex id -> the record's `attempts` when it was last handed to Slurm.
        self.attempts_at_submit: dict[str, int] = {}
        #: qex ids whose stop came from `qex kill` (their end is `killed`).
        self.killed: set[str] = set()
        #: Jobs of an earlier coordinator that were not yet in Slurm: it may have died between
        #: `sbatch --hold` and writing the id, so a held leftover is looked for once.
        self.orphan_check: set[str] = set()
        #: How many `squeue` calls were made (`qex info`; tests count them).
        self.polls = 0
        #: When `sinfo` last failed, and why (a refusal repeats it for SINFO_RETRY_SECS).
        self._sinfo_failure: tuple[float, str] | None = None
        #: The last failure of `squeue`, logged once until it answers again.
        self._squeue_failure: str | None = None
        #: When the last `squeue` began (monotonic seconds).
        self.last_poll = -1e9
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._calls: set[asyncio.Task[None]] = set()

    # -- the Engine interface ------------------------------------------------------------

    def refuse(self, spec: JobSpec) -> str | None:
        config = self.coord.config.engine
        shared = config.shared_dir
        state_dir = self.coord.paths.state_dir
        if shared and not _inside(state_dir, Path(shared)):
            return (f"qex's state directory {state_dir} is not inside [engine] shared_dir "
                    f"{shared}, so the nodes could not write the job's record; set "
                    "XDG_STATE_HOME to a directory under it, or correct shared_dir")
        if spec.locks:
            return (f"the lock {', '.join(spec.locks)} has no meaning on Slurm, which admits "
                    "the job; drop --lock, or use Slurm's licenses through [engine] "
                    "sbatch_options (for example \"--licenses=name:1\")")
        others = sorted(name for name in spec.claims if name != mapping.GPU_POOL)
        if others:
            return (f"the claim on {', '.join(others)} has no meaning on Slurm, where only GPUs "
                    "(--gpu) become a request (--gres=gpu:N); drop it, or give Slurm's own "
                    "option through [engine] sbatch_options")
        if self.partitions is None:
            failed = self._sinfo_failure
            if failed is not None and time.monotonic() - failed[0] < SINFO_RETRY_SECS:
                problem = failed[1]   # a controller that is down costs ~9 s per try: not again
            else:
                try:
                    self.partitions = commands.partitions_now()
                    problem = None
                except commands.SlurmError as exc:
                    problem = str(exc)
                    self._sinfo_failure = (time.monotonic(), problem)
            if problem is not None:
                return (f"qex could not read Slurm's partitions: {problem}; nothing was "
                        "submitted. Check that Slurm answers (`sinfo`), or submit with "
                        "--engine local")
        request = self._request(spec.id, spec.name, spec.cpu, spec.mem, claims=spec.claims,
                                timeout=spec.timeout)
        return mapping.refusal(request, self.partitions or [])

    def accept(self, job: Job) -> None:
        job.record.blocked_reason = "is handed to Slurm now."
        self._track(job)

    def adopt(self, job: Job) -> None:
        """A job of a previous coordinator: watch it again, or submit it if it never was."""
        if not job.record.engine_id and job.record.state == State.QUEUED.value:
            self.orphan_check.add(job.id)
        self._track(job)
        log(f"the Slurm job {job.record.engine_id or '(not yet submitted)'} of "
            f"{label(job.record)} is watched again")

    def kill(self, job: Job, signum: int) -> dict[str, Any]:
        slurm_id = job.record.engine_id
        if not slurm_id:
            return protocol.error(protocol.WRONG_STATE, (
                f"the job {job.id} is starting and has no Slurm job yet; try again in a moment"))
        try:
            job_files.mark_killed(job.dir, signum)
        except OSError as exc:
            return protocol.error(protocol.INTERNAL, (
                f"qex could not mark the job {job.id} as stopped by a person "
                f"({exc.strerror or exc}), so it asked Slurm for nothing"))
        self.killed.add(job.id)
        name = None if signum == signal.SIGTERM else str(signum)
        self._call(self.slurm.scancel(slurm_id, name), f"stop the Slurm job {slurm_id}")
        log(f"qex asked Slurm to stop the job {label(job.record)} (Slurm job {slurm_id})")
        return protocol.ok()

    def cancel(self, job: Job) -> None:
        slurm_id = job.record.engine_id
        self._untrack(job.id)
        if slurm_id:
            self._call(self.slurm.scancel(slurm_id), f"cancel the Slurm job {slurm_id}")

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "jobs_watched": sum(1 for job in self.tracked.values() if not job.final),
            "jobs_waiting_here": len(self.unsubmitted),
            "squeue_calls": self.polls,
            "poll_secs": self.coord.config.engine.poll,
            "partitions": [p.name for p in self.partitions or []],
        }

    def _partitions(self) -> list[mapping.Partition]:
        if self.partitions is None:
            try:
                self.partitions = commands.partitions_now()
            except commands.SlurmError as exc:
                log(f"qex could not read Slurm's partitions: {exc}")
                return []
        return self.partitions

    # -- the watcher ---------------------------------------------------------------------

    def _track(self, job: Job) -> None:
        self.tracked[job.id] = job
        waiting = job.record.state == State.QUEUED.value and not job.record.engine_id
        if waiting and job.id not in self.unsubmitted:
            self.unsubmitted.append(job.id)
        self.attempts_at_submit.setdefault(job.id, job.record.attempts)
        self._wake.set()
        if self.background and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._loop())

    def _untrack(self, job_id: str) -> None:
        self.tracked.pop(job_id, None)
        self.attempts_at_submit.pop(job_id, None)
        self.killed.discard(job_id)
        try:
            self.unsubmitted.remove(job_id)
        except ValueError:
            pass

    def _call(self, work: Coroutine[Any, Any, None], what: str) -> None:
        """Run one Slurm call in the background; a failure goes to the coordinator log."""
        async def guarded() -> None:
            try:
                await work
            except commands.SlurmError as exc:
                log(f"qex could not {what}: {exc}")
        task = asyncio.get_running_loop().create_task(guarded())
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)

    async def _loop(self) -> None:
        """Submit as soon as a job arrives; look at Slurm's queue once per `poll`, never more
        often, however many jobs arrive (a burst of submissions costs no extra squeue)."""
        while self.tracked and not self.coord.stopping:
            self._wake.clear()
            interval = self.coord.config.engine.poll
            due = time.monotonic() - self.last_poll >= interval * 0.95
            try:
                await self.step(poll=due)
            except asyncio.CancelledError:
                raise
            except Exception:
                log_exception("a look at Slurm failed")
            if not self.tracked:
                break
            wait = max(0.05, interval - (time.monotonic() - self.last_poll))
            try:
                await asyncio.wait_for(self._wake.wait(), wait)
            except TimeoutError:
                pass

    async def step(self, *, poll: bool = True) -> None:
        """One turn: hand ready jobs to Slurm, then (when due) one `squeue` for all of them."""
        for job_id in [i for i, job in self.tracked.items() if job.final]:
            self._untrack(job_id)   # its supervisor's final record came first (job_changed)
        for job_id in list(self.unsubmitted):
            job = self.tracked.get(job_id)
            if job is None or job.final or job.record.engine_id:
                self.unsubmitted.remove(job_id)
                continue
            await self._submit(job)
        if poll:
            self.last_poll = time.monotonic()
            await self._poll()

    # -- submission ----------------------------------------------------------------------

    def _request(self, job_id: str, name: str, cpu: int, mem: int, *,
                 claims: dict[str, PoolClaimPart], timeout: float | None,
                 afterok: tuple[str, ...] = (), afterany: tuple[str, ...] = (),
                 output: str | None = None, chdir: str | None = None) -> mapping.Request:
        config = self.coord.config.engine
        return mapping.Request(
            job_id=job_id, name=name, cpu=cpu, mem=mem, gpus=mapping.gpu_count(claims),
            timeout=timeout, afterok=afterok, afterany=afterany, partition=config.partition,
            account=config.account, qos=config.qos, extra=config.sbatch_options, output=output,
            chdir=chdir)

    def dependencies(self, job: Job) -> DepPlan:
        """Whether a job can go to Slurm now, must wait here, or is skipped (as on one machine)."""
        afterok: list[str] = []
        afterany: list[str] = []
        for dep_id in job.record.needs:
            dep = self.coord.jobs.get(dep_id)
            if dep is None:
                return DepPlan("skip", words.needs_gone(dep_id), root=dep_id)
            if dep.final:
                if dep.record.state == State.COMPLETED.value:
                    continue
                root = dep.record.caused_by or dep_id
                root_job = self.coord.jobs.get(root)
                root_label = words.job_label(root, root_job.record.name if root_job else "job")
                via = None if root == dep_id else words.job_label(dep_id, dep.record.name)
                state = root_job.record.state if root_job else dep.record.state
                return DepPlan("skip", words.needs_broken(root, root_label, state, via), root=root)
            if dep.record.engine == self.kind and dep.record.engine_id:
                afterok.append(dep.record.engine_id)
                continue
            return DepPlan("wait", words.needs_waiting(words.job_label(dep_id, dep.record.name),
                                                       dep.record.state))
        for dep_id in job.record.after:
            dep = self.coord.jobs.get(dep_id)
            if dep is None or dep.final:
                continue
            if dep.record.engine == self.kind and dep.record.engine_id:
                afterany.append(dep.record.engine_id)
                continue
            return DepPlan("wait", words.after_waiting(words.job_label(dep_id, dep.record.name),
                                                       dep.record.state))
        return DepPlan("go", None, afterok=tuple(afterok), afterany=tuple(afterany))

    def _set_reason(self, job: Job, reason: str) -> None:
        if job.record.blocked_reason != reason:
            job.record.blocked_reason = reason
            job.record.blocked_since = job.record.blocked_since or self.coord.now()
            self.coord.publish(job)

    def _script(self, job: Job) -> Path:
        paths = self.coord.paths
        env = {"XDG_STATE_HOME": str(paths.state_dir.parent),
               "XDG_CONFIG_HOME": str(paths.config_file.parent)}
        for key in ("HOME", "XDG_RUNTIME_DIR", "TMPDIR"):
            if os.environ.get(key):
                env[key] = os.environ[key]
        python = self.coord.config.engine.python or _python()
        text = mapping.batch_script(python=python, job_id=job.id, env=env)
        path = job.dir / SCRIPT_FILE
        atomic.write_bytes(path, text.encode(), mode=0o700)
        return path

    async def _submit(self, job: Job) -> None:
        plan = self.dependencies(job)
        if plan.kind == "wait":
            self._set_reason(job, str(plan.text))
            return
        if plan.kind == "skip":
            self._untrack(job.id)
            self.coord.finish(job, State.SKIPPED, error=plan.text, caused_by=plan.root)
            return
        if job.id in self.orphan_check:
            self.orphan_check.discard(job.id)
            await self._cancel_leftovers(job)
        spec = job_files.read_spec(job.dir)
        record = job.record
        try:
            script = self._script(job)
        except OSError as exc:
            self._untrack(job.id)
            self.coord.finish(job, State.FAILED, error=(
                f"qex could not write the batch script into {job.dir} "
                f"({exc.strerror or exc}); fix the state directory and run `qex rerun`"))
            return
        request = self._request(job.id, record.name, record.cpu, record.mem,
                                claims=record.claims,
                                timeout=spec.timeout if spec is not None else None,
                                afterok=plan.afterok, afterany=plan.afterany,
                                output=str(job.dir / OUTPUT_FILE), chdir=str(job.dir))
        try:
            slurm_id = await self.slurm.sbatch(mapping.sbatch_args(request), str(script))
        except commands.SlurmError as exc:
            if any(word in str(exc) for word in TRANSIENT):
                self._set_reason(job, f"waits for Slurm to answer: {exc}")
                return
            self._untrack(job.id)
            self.coord.finish(job, State.FAILED, error=(
                f"Slurm refused this job: {exc}. Correct the claim or [engine] and run "
                f"`qex rerun {job.id[:8]}`"))
            return
        if job.final:  # cancelled while sbatch ran
            self._call(self.slurm.scancel(slurm_id), f"cancel the Slurm job {slurm_id}")
            return
        record.engine_id = slurm_id
        record.blocked_reason = mapping.reason_words("None", slurm_id)
        record.blocked_since = self.coord.now()
        self.attempts_at_submit[job.id] = record.attempts
        if job.id in self.unsubmitted:
            self.unsubmitted.remove(job.id)
        if not self.coord.write_logged(job):
            self._call(self.slurm.scancel(slurm_id), f"cancel the Slurm job {slurm_id}")
            self._untrack(job.id)
            self.coord.finish(job, State.FAILED, error=(
                "qex could not write Slurm's job id into the record, so it took the job out of "
                "Slurm again; free space in the state directory and run `qex rerun`"))
            return
        self.coord.publish(job)
        log(f"the job {label(record)} is Slurm job {slurm_id}")
        try:
            await self.slurm.release(slurm_id)
        except commands.SlurmError as exc:
            self._call(self.slurm.scancel(slurm_id), f"cancel the Slurm job {slurm_id}")
            self._untrack(job.id)
            self.coord.finish(job, State.FAILED, error=(
                f"Slurm took the job but qex could not let it start ({exc}); run `qex rerun`"))

    async def _cancel_leftovers(self, job: Job) -> None:
        """Cancel a held job of this qex id that an earlier coordinator left in Slurm."""
        name = mapping.job_name(job.id, job.record.name)
        try:
            leftovers = await self.slurm.ids_named(name)
        except commands.SlurmError as exc:
            log(f"qex could not look for a leftover Slurm job of {label(job.record)}: {exc}")
            return
        for slurm_id in leftovers:
            log(f"the Slurm job {slurm_id} of {label(job.record)} was left held by an earlier "
                "coordinator; qex cancels it and submits the job once")
            self._call(self.slurm.scancel(slurm_id), f"cancel the Slurm job {slurm_id}")

    # -- watching ------------------------------------------------------------------------

    async def _poll(self) -> None:
        watched = {job.record.engine_id: job for job in self.tracked.values()
                   if job.record.engine_id and not job.final}
        if not watched:
            return
        self.polls += 1
        try:
            found = await self.slurm.squeue(sorted(watched, key=_numeric))
        except commands.SlurmError as exc:
            # The controller may be restarting: say so once, and look again next interval.
            if str(exc) != self._squeue_failure:
                log(f"qex could not read Slurm's queue: {exc}; it tries again every "
                    f"{self.coord.config.engine.poll:g} s, and the jobs keep their records")
            self._squeue_failure = str(exc)
            return
        if self._squeue_failure is not None:
            log("Slurm's queue answers again")
            self._squeue_failure = None
        for slurm_id, job in watched.items():
            if job.final or job.record.engine_id != slurm_id or job.id not in self.tracked:
                continue  # changed while squeue ran
            entry = found.get(slurm_id)
            if entry is None or mapping.ended(entry):
                self._ended(job, slurm_id, entry)
            elif mapping.pending(entry):
                self._pending(job, slurm_id, entry)
            else:
                self.coord.refresh(job)

    def _pending(self, job: Job, slurm_id: str, entry: mapping.SlurmJob) -> None:
        if entry.reason != mapping.DEPENDENCY_NEVER:
            if job.record.state == State.QUEUED.value:
                self._set_reason(job, mapping.reason_words(entry.reason, slurm_id))
            return
        plan = self.dependencies(job)
        if plan.kind == "skip":
            self._untrack(job.id)
            self._call(self.slurm.scancel(slurm_id), f"cancel the Slurm job {slurm_id}")
            log(f"the job {label(job.record)} can never start (DependencyNeverSatisfied); "
                f"qex skips it and cancels Slurm job {slurm_id}")
            self.coord.finish(job, State.SKIPPED, error=plan.text, caused_by=plan.root)
            return
        if plan.kind == "wait":
            self._set_reason(job, str(plan.text))
            return
        # A needed job went back to Slurm under a new id (an OOM retry): point at that one.
        text = mapping.dependency(plan.afterok, plan.afterany)
        if text:
            self._call(self.slurm.set_dependency(slurm_id, text),
                       f"renew the dependency of the Slurm job {slurm_id}")

    def _ended(self, job: Job, slurm_id: str, entry: mapping.SlurmJob | None) -> None:
        disk = self.coord.read_disk(job)
        if disk is not None and disk.final:
            stopped_by_slurm = entry is not None and entry.state in SLURM_STOPS
            explained = "Slurm" in (disk.error or "")
            if stopped_by_slurm and not explained and job.id not in self.killed and entry:
                # The supervisor saw a signal from outside; Slurm says whose it was.
                disk.error = mapping.ending(entry.state, ran=True, slurm_id=slurm_id,
                                            killed_by_qex=False).error
                try:
                    job_files.write_status(job.dir, disk)
                except OSError as exc:
                    log(f"qex could not write the record of {label(disk)}: {exc}")
            self._untrack(job.id)
            self.coord.adopt(job, disk)
            return
        ran_again = disk is not None and disk.attempts > self.attempts_at_submit.get(job.id, 0)
        if disk is not None and disk.state == State.QUEUED.value and ran_again:
            self._resubmit(job, disk)
            return
        if disk is not None and disk.state != State.QUEUED.value:
            job.record = disk
        marked = (job.dir / job_files.KILLED_MARK).exists()
        ended = mapping.ending(entry.state if entry else None,
                               ran=job.record.state != State.QUEUED.value, slurm_id=slurm_id,
                               killed_by_qex=job.id in self.killed or (
                                   marked and job.record.state != State.QUEUED.value))
        if marked:
            try:
                os.unlink(job.dir / job_files.KILLED_MARK)
            except OSError:
                pass
        if ended.oom and self._oom_retry(job, slurm_id):
            return
        self._untrack(job.id)
        if ended.oom:
            job.record.oom_evidence = "slurm"
        log(f"the job {label(job.record)} ended in Slurm ({entry.state if entry else 'gone'}) "
            f"without a result of its supervisor: {ended.state.value}")
        self.coord.finish(job, ended.state, error=ended.error)

    def _resubmit(self, job: Job, disk: Any) -> None:
        """The supervisor raised the claim after a proven OOM: hand the job to Slurm again."""
        disk.back_to_queue()
        disk.engine_id = None
        job.record = disk
        self.coord.write_logged(job)
        self.coord.publish(job)
        self.unsubmitted.append(job.id)
        self._wake.set()
        log(f"the job {label(disk)} goes back to Slurm with the larger claim")

    def _oom_retry(self, job: Job, slurm_id: str) -> bool:
        """Slurm said OUT_OF_MEMORY and the supervisor could not: raise the claim and retry."""
        from qex.core import classify as verdicts
        from qex.core.hints import rewrite_hints
        from qex.core.oom_retry import plan_oom

        record = job.record
        config = self.coord.config
        left = record.oom_retries_left
        if left is None:
            left = config.retry.on_oom
        budget = max((p.mem_mb for p in self._partitions()), default=0) * mapping.MIB
        plan = plan_oom(record.mem, budget or record.mem * 1024, config.retry.growth, left)
        if plan.new_mem is None:
            return False
        spec = job_files.read_spec(job.dir)
        if spec is None:
            return False
        old, new = record.mem, plan.new_mem
        env = dict(spec.env)
        rewrite_hints(env, spec.hint_keys, spec.cpu, new, config.claims.also)
        spec.env = env
        spec.mem = new
        try:
            job_files.write_spec(job.dir, spec)
        except OSError:
            return False
        attempt = max(1, record.attempts)
        record.attempts = attempt
        record.back_to_queue()
        record.engine_id = None
        record.mem = new
        record.oom_retries_left = left - 1
        record.oom_evidence = "slurm"
        record.queue_time_applies = False
        raised = verdicts.oom_raise_note(attempt, old, new)
        record.note = f"{record.note} {raised}" if record.note else raised
        record.error = (f"Slurm stopped attempt {attempt} for memory (job {slurm_id}: "
                        "OUT_OF_MEMORY); " + verdicts.oom_requeue_sentence(attempt, old, new,
                                                                            left - 1))
        self.attempts_at_submit[job.id] = record.attempts
        self.coord.write_logged(job)
        self.coord.publish(job)
        self.unsubmitted.append(job.id)
        self._wake.set()
        log(f"the job {label(record)} goes back to Slurm with {new} bytes after OUT_OF_MEMORY")
        return True


#: Slurm end states that mean Slurm (or someone through it) stopped a running job.
SLURM_STOPS = frozenset({"CANCELLED", "PREEMPTED", "TIMEOUT", "NODE_FAIL", "DEADLINE"})


def _inside(path: Path, top: Path) -> bool:
    try:
        path.resolve().relative_to(top.resolve())
    except ValueError:
        return False
    return True


def _numeric(slurm_id: str) -> tuple[int, str]:
    return (int(slurm_id) if slurm_id.isdigit() else 0, slurm_id)


def _python() -> str:
    import sys

    return sys.executable
