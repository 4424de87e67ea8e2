"""The coordinator's main loop: sleep until something changes or a deadline arrives.

There is no fixed tick. Every change (a submit, a `job_changed` note, a child exit, a
cancel, a pause) calls `coord.kick()`, and the loop also computes the earliest deadline that
a decision depends on: a `--max-queue-time` expiry, the end of a pause, the settle time of
an oversized job, a re-measure while a job waits for another user or for machine memory, the
config file settling, the slow safety scan while jobs run, the peer heartbeat while we hold
claims, and the idle exit. With nothing queued and nothing running the only timer left is
the idle exit, so an idle coordinator costs no CPU.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from qex.coordinator import pausing
from qex.coordinator.log import log
from qex.coordinator.reaper import reap_children
from qex.coordinator.scheduling import peer_claims, run_pass
from qex.coordinator.state import Coordinator
from qex.core import queue_time
from qex.core.scheduler_types import PeerLoad
from qex.platform import chaintrace, procs
from qex.platform.pollwatch import ConfigWatch
from qex.store import history
from qex.store import peers as peer_files
from qex.store.config_file import ConfigWatcher

#: Re-read active records from disk this often while jobs run (a lost note cannot strand one).
SAFETY_SCAN_SECS = 30.0
#: Re-measure this often while the head waits for another user or for machine memory.
EXTERNAL_RECHECK_SECS = 1.0
#: Look again this often while jobs wait and no event would announce a change (a parked head,
#: or a config file that inotify cannot watch).
QUEUED_HEARTBEAT_SECS = 5.0
#: Peers are read at most this often (a burst of submissions reads them once).
PEER_READ_SECS = 0.5
#: A publish that failed is tried again after this pause, doubled up to the maximum.
PUBLISH_RETRY_FIRST_SECS = 1.0
PUBLISH_RETRY_MAX_SECS = 60.0
#: History pruning while a coordinator lives for days.
HISTORY_PRUNE_SECS = 6 * 3600.0
#: A pass over a queue longer than this may end its walk once nothing behind can start
#: (`Snapshot.partial`); a shorter queue is read whole by every pass (about 0.2 ms).
PARTIAL_FROM = 128
#: After a pass that read the whole queue in d seconds, the passes of the next
#: WHOLE_PASS_FACTOR x d seconds (WHOLE_PASS_MIN_SECS at least) may be partial: the whole
#: walks take about a twentieth of the coordinator's time however long the queue, and the
#: reasons of the jobs that partial passes leave unread are made new within that time.
WHOLE_PASS_FACTOR = 20.0
WHOLE_PASS_MIN_SECS = 0.05

_program: list[tuple[str, tuple[int, int, int] | None]] = []


def _identity(path: str) -> tuple[int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_mtime_ns


def remember_program(*files: str | None) -> None:
    """Note the files that make this program (the caller names them), so a replaced install
    can be noticed."""
    _program.clear()
    for path in files:
        if path:
            _program.append((path, _identity(path)))


def program_replaced() -> bool:
    """True when a file of this program changed or vanished since the coordinator started."""
    return any(_identity(path) != ident for path, ident in _program)


def pid_alive(pid: int) -> bool:
    """Any user's process: EPERM means it exists (a peer coordinator of another user)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return not procs.is_zombie(pid)


class Runner:
    def __init__(self, coord: Coordinator, watcher: ConfigWatcher | None,
                 client_count: Callable[[], int], file_watch: ConfigWatch | None = None) -> None:
        self.coord = coord
        self.watcher = watcher
        self.file_watch = file_watch
        self.client_count = client_count
        self.external_wait = False
        now = coord.now()
        self.last_scan = now
        self.last_peer_read = 0.0
        self.last_publish = 0.0
        self.published: tuple[int, int, dict[str, int], dict[str, list[int]]] | None = None
        self.last_prune = now
        #: A failed publish: its cause (logged once per change) and when to try again.
        self.publish_problem: str | None = None
        self.publish_retry_at: float | None = None
        self.publish_backoff = 0.0
        #: Until when a pass may be partial (`scheduler_pass`), and whether one left jobs
        #: unread since the last whole pass (then a whole pass is due at that time).
        self.partial_until = 0.0
        self.unread = False
        #: What the last whole pass judged by that every queued job's reason depends on: a
        #: change of the pauses, the config or the budget makes the next pass whole.
        self.whole_inputs: tuple[Any, ...] | None = None
        coord.peer_refresher = lambda: self.read_peers(coord.now())

    # -- the loop ----------------------------------------------------------------------------

    async def run(self) -> None:
        coord = self.coord
        while True:
            if coord.stopping:
                break
            await coord.wait_for_kick(self.next_delay(coord.now()))
            if coord.is_stopping():
                break
            coord.wakeups += 1
            chaintrace.mark("co.tick", "-")
            try:
                self.tick()
            except Exception:
                from qex.coordinator.log import log_exception

                log_exception("a scheduler pass failed")

    def tick(self) -> None:
        coord = self.coord
        now = coord.now()
        self.check_config(now)
        if coord.write_retry_at is not None and now >= coord.write_retry_at:
            coord.retry_unwritten()
        if any(True for _ in coord.active_jobs()) and now - self.last_scan >= SAFETY_SCAN_SECS:
            self.safety_scan(now)
        peers = self.read_peers(now) if coord.queue else coord.peer_load
        self.scheduler_pass(peers, now)
        self.publish_peer(coord.now())
        if now - self.last_prune >= HISTORY_PRUNE_SECS:
            self.prune_history(now)
        self.check_idle(coord.now())

    def scheduler_pass(self, peers: PeerLoad, now: float) -> None:
        """One pass, partial where it may be: a long queue, a whole pass not long ago and
        over the same pauses, config and budget (a change of those may change the reason of
        every queued job, which a person then looks for at once), and no queue time limit
        due (a job past its limit may stand where a partial walk does not reach, and its
        deadline would wake the loop again at once)."""
        coord = self.coord
        long_queue = len(coord.queue) > PARTIAL_FROM
        inputs: tuple[Any, ...] | None = None
        if long_queue:
            pausing.end_due_pauses(coord, now)  # as the pass would, before it is judged
            inputs = (pausing.pause_view(coord), coord.config, coord.cpu_budget(),
                      coord.mem_budget())
        partial = (long_queue and now < self.partial_until and inputs == self.whole_inputs
                   and not self.expiry_due(now))
        began = time.perf_counter()
        # The pause view made for the comparison serves the pass too.
        result = run_pass(coord, peers, partial=partial,
                          pause=inputs[0] if inputs is not None else None)
        self.external_wait = result.external_wait
        if result.decision.complete:
            took = time.perf_counter() - began
            self.partial_until = coord.now() + max(WHOLE_PASS_MIN_SECS, WHOLE_PASS_FACTOR * took)
            self.unread = False
            self.whole_inputs = inputs
        else:
            self.unread = True

    def expiry_due(self, now: float) -> bool:
        """A queued job's queue time limit is over (its pass has not expired it yet)."""
        for job in self.coord.timed_queued_jobs():
            expiry = queue_time.deadline(job.record, job.max_queue_time)
            if expiry is not None and expiry <= now:
                return True
        return False

    def next_delay(self, now: float) -> float | None:  # noqa: C901, PLR0912 (one timer a branch)
        coord = self.coord
        deadlines: list[float] = []
        if self.watcher is not None:
            delay = self.watcher.next_check_delay()
            if delay is not None:
                deadlines.append(now + delay)
        if coord.write_retry_at is not None:
            deadlines.append(coord.write_retry_at)
        if self.unread and coord.queue:
            deadlines.append(self.partial_until)  # the whole pass that reads them
        if coord.queue and coord.disk_wait_until is not None and coord.disk_wait_until > now:
            deadlines.append(coord.disk_wait_until)
        pause_end = pausing.next_pause_deadline(coord)
        if pause_end is not None:
            deadlines.append(pause_end)
        paused = coord.pauses.queue is not None
        if coord.queue and not paused:
            for job in coord.timed_queued_jobs():
                expiry = queue_time.deadline(job.record, job.max_queue_time)
                if expiry is not None:
                    deadlines.append(expiry + 0.01)  # a little late, so the pass finds it due
            if coord.idle_since is not None and self.oversized_waits():
                deadlines.append(coord.idle_since + coord.config.queue.settle + 0.01)
            if self.external_wait:
                deadlines.append(now + EXTERNAL_RECHECK_SECS)
            elif coord.queue_state == "parked" or not self.config_watched():
                # A parked head can hide jobs that wait for machine memory, and without
                # inotify a budget edit is only seen when we look.
                deadlines.append(now + QUEUED_HEARTBEAT_SECS)
        active = any(True for _ in coord.active_jobs())
        if active:
            deadlines.append(self.last_scan + SAFETY_SCAN_SECS)
            if self.publish_retry_at is not None:
                deadlines.append(self.publish_retry_at)
            elif self.published is not None:
                deadlines.append(self.last_publish + self.heartbeat_secs())
        if not coord.has_work():
            deadlines.append(coord.last_contact + coord.idle_limit)
        if not deadlines:
            return None
        return max(0.0, min(deadlines) - now)

    def oversized_waits(self) -> bool:
        """A queued job larger than the budget waits for the machine to be quiet for `settle`."""
        cpu_budget, mem_budget = self.coord.cpu_budget(), self.coord.mem_budget()
        return any(job.record.cpu > cpu_budget or job.record.mem > mem_budget
                   for job in self.coord.queued_jobs())

    def config_watched(self) -> bool:
        """True while a watch (inotify, or the portable poll) tells us of config edits."""
        return self.file_watch is not None and not self.file_watch.closed

    # -- the parts of a tick ---------------------------------------------------------------------

    def check_config(self, now: float) -> None:
        watcher = self.watcher
        if watcher is None:
            return
        try:
            fresh = watcher.check(now)
        except Exception as exc:
            self.coord.config_error = f"qex could not read the configuration again: {exc}"
            return
        self.coord.config_error = watcher.error
        if fresh is not None and fresh != self.coord.config:
            self.coord.config = fresh
            log("the configuration file changed; the coordinator uses the new values for jobs "
                "that start from now on")
            for note in fresh.notes:
                log(note)

    def safety_scan(self, now: float) -> None:
        """Re-read every active record, and reap any child whose exit we did not hear."""
        self.last_scan = now
        reap_children(self.coord)
        for job in list(self.coord.active_jobs()):
            self.coord.refresh(job)

    def peers_root(self) -> Path | None:
        coord = self.coord
        if not coord.config.peers.enabled:
            coord.peers_problem = None
            return None
        root = coord.paths.peers_dir(coord.config.peers.dir)
        problem = peer_files.check_root(root)
        if problem != coord.peers_problem and problem is not None:
            log(f"other users' claims are not counted: {problem}")
        coord.peers_problem = problem
        return None if problem else root

    def read_peers(self, now: float) -> PeerLoad:
        coord = self.coord
        if now - self.last_peer_read < PEER_READ_SECS:
            return coord.peer_load
        self.last_peer_read = now
        root = self.peers_root()
        if root is None:
            coord.peer_load = PeerLoad()
            return coord.peer_load
        summary = peer_files.read_peers(
            root, my_uid=os.getuid(), my_pid=os.getpid(), boot_id=coord.boot_id, now=now,
            stale_after=coord.config.peers.stale_after or 30.0, alive=pid_alive,
        )
        coord.peer_load = PeerLoad(
            count=summary.count, cpu=summary.cpu, mem=summary.mem, pools=dict(summary.pools),
            devices={name: frozenset(found) for name, found in summary.devices.items()},
        )
        return coord.peer_load

    def heartbeat_secs(self) -> float:
        return max(1.0, (self.coord.config.peers.stale_after or 30.0) / 3.0)

    def publish_peer(self, now: float) -> None:
        """Publish our claims when they changed or the heartbeat is due; withdraw at zero."""
        coord = self.coord
        claims = peer_claims(coord)
        holding = bool(claims[0] or claims[1] or claims[2])
        if not holding:
            if self.published is not None:
                root = self.peers_root()
                if root is not None:
                    peer_files.withdraw(root, os.getuid(), os.getpid())
                self.published = None
            return
        if claims == self.published and now - self.last_publish < self.heartbeat_secs():
            return
        if self.publish_retry_at is not None and now < self.publish_retry_at:
            return
        root = self.peers_root()
        if root is None:
            # The directory is unusable (said once by peers_root): look again at the next
            # heartbeat, not at once.
            self.publish_retry_at = now + self.heartbeat_secs()
            return
        record = peer_files.PeerRecord(
            uid=os.getuid(), pid=os.getpid(), boot_id=coord.boot_id, cpu=claims[0], mem=claims[1],
            pools=claims[2], devices=claims[3], updated_at=now,
        )
        try:
            peer_files.publish(root, record)
        except OSError as exc:
            self.publish_failed(now, exc)
            return
        if self.publish_problem is not None:
            log("this queue's claims are published for other users again")
        self.publish_problem = None
        self.publish_retry_at = None
        self.publish_backoff = 0.0
        self.published = claims
        self.last_publish = now

    def publish_failed(self, now: float, exc: OSError) -> None:
        """Try again later (the pause doubles up to a minute); say it once per cause."""
        from qex.coordinator.state import describe_os_error

        cause = str(exc) if isinstance(exc, peer_files.UnsafeDirectory) else describe_os_error(exc)
        if cause != self.publish_problem:
            self.publish_problem = cause
            log(f"qex could not publish this queue's claims for other users: {cause}; it "
                "tries again with growing pauses and says so here only when the cause changes")
        self.publish_backoff = min(PUBLISH_RETRY_MAX_SECS,
                                   max(PUBLISH_RETRY_FIRST_SECS, self.publish_backoff * 2))
        self.publish_retry_at = now + self.publish_backoff

    def withdraw_peer(self) -> None:
        if self.published is None:
            return
        root = self.peers_root()
        if root is not None:
            peer_files.withdraw(root, os.getuid(), os.getpid())
        self.published = None

    def prune_history(self, now: float) -> None:
        self.last_prune = now
        try:
            gone = history.prune(self.coord.paths, keep=self.coord.config.history.keep or 86400.0,
                                 now=now, live_ids=set(self.coord.jobs))
        except OSError as exc:
            log(f"qex could not prune the history file: {exc.strerror or exc}")
            return
        if gone:
            log(f"the history forgot {gone} removed job id(s) older than [history] keep")

    def check_idle(self, now: float) -> None:
        """Stop when nothing is left to do: idle for the limit, or the program was replaced."""
        coord = self.coord
        if coord.stopping or coord.has_work():
            return
        if now - coord.last_contact >= coord.idle_limit:
            coord.stopping = True
            coord.stop_reason = (
                f"no job operates and no command arrived for {int(coord.idle_limit)} seconds")
            coord.kick()
            return
        if self.client_count() == 0 and program_replaced():
            coord.stopping = True
            coord.stop_reason = ("no job operates, and the qex program was replaced; the next "
                                 "command starts a coordinator of the new version")
            coord.kick()
