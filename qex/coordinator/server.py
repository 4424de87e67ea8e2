"""The socket server: JSON lines in, JSON lines out, many requests per connection.

Each connection reads one request line at a time and writes one answer line, except
`events` (the connection becomes a stream) and `wait` (the answer comes when the job is
final). A line that is not a JSON object gets an `error` answer and the connection goes on;
unknown fields are ignored (the additive rule). Only the same user (or root) may talk to the
coordinator: the socket is 0600 in a 0700 directory, and SO_PEERCRED checks it again.

The read of the next line is always pending as a task, so a `wait` or an event stream can
notice at once that the client went away (EOF) and drop what it held for it; a job owned
through `own_job` is cancelled then, if it is still queued.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from qex.coordinator import control, listing, pausing, queries
from qex.coordinator.events import wrap
from qex.coordinator.log import log, log_exception
from qex.coordinator.state import Coordinator, Job, label
from qex.coordinator.submit import SubmissionWakes, handle_submit
from qex.core import protocol
from qex.core.protocol import Op, Result
from qex.core.records import JobStatus
from qex.platform import chaintrace

#: The longest time one event line may take to leave; a reader that stalls longer is dropped.
EVENT_WRITE_TIMEOUT = 30.0
#: A `wait` re-reads the record at least this often, whatever it was told.
WAIT_RECHECK_SECS = 30.0


class WithText(NamedTuple):
    """An answer line and the text that follows it (`protocol.list_json`, `list_table`)."""

    answer: dict[str, Any]
    text: bytes


Handler = Callable[["Client", dict[str, Any]], Awaitable["dict[str, Any] | WithText | None"]]


class Client:
    """One connection: its streams, its pending read, and the jobs it owns."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.owned: set[str] = set()
        self._pending: asyncio.Task[bytes] | None = None
        #: This connection's `submit` requests as one run (made at its first).
        #: When this connection's run of submissions and cancels wakes the scheduler.
        self.wakes: SubmissionWakes | None = None

    def run_wakes(self, coord: Coordinator) -> SubmissionWakes:
        """The wakes of this connection's run of submissions and cancels, made on first use."""
        if self.wakes is None:
            self.wakes = SubmissionWakes(coord)
        return self.wakes

    def next_line(self) -> asyncio.Task[bytes]:
        if self._pending is None:
            self._pending = asyncio.ensure_future(self.reader.readline())
        return self._pending

    def consume(self) -> bytes:
        task = self._pending
        assert task is not None and task.done()
        self._pending = None
        return task.result()

    async def hung_up_or(self, future: Awaitable[Any], timeout: float | None, *,
                         discard_input: bool = False) -> bool:
        """Wait for `future` (or the timeout). True when the client closed its end first.

        A request line that arrives meanwhile stays pending for the main loop (it is answered
        after this one), or is dropped when `discard_input` (an event stream takes no input).
        """
        waiter = asyncio.ensure_future(future)
        try:
            while True:
                line_task = self.next_line()
                if line_task.done():
                    if _hung_up(line_task):
                        return True
                    if discard_input:
                        self.consume()
                        continue
                    await asyncio.wait({waiter}, timeout=timeout)
                    return False
                done, _ = await asyncio.wait({waiter, line_task}, timeout=timeout,
                                             return_when=asyncio.FIRST_COMPLETED)
                if line_task not in done:
                    return False
        finally:
            if not waiter.done():
                waiter.cancel()

    async def send(self, message: dict[str, Any], text: bytes = b"") -> None:
        """Write one answer line, and the bytes that follow it when the answer has them."""
        self.writer.write(protocol.encode(message))
        if text:
            self.writer.write(text)
        await self.writer.drain()

    def close(self) -> None:
        task = self._pending
        if task is not None and not task.done():
            task.cancel()
        elif task is not None and not task.cancelled():
            # A read that failed after the loop stopped reading (the peer's end broke while
            # the coordinator stopped): taken here, or asyncio logs "Task exception was never
            # retrieved" for a connection that ended as connections do.
            task.exception()
        try:
            self.writer.close()
        except (OSError, RuntimeError):
            pass


def _hung_up(task: asyncio.Task[bytes]) -> bool:
    """A finished read that ends the connection: EOF, a broken connection, or a line too long."""
    if task.cancelled() or task.exception() is not None:
        return True
    return not task.result()


def peer_uid(sock: socket.socket | None) -> int | None:
    if sock is None or not hasattr(socket, "SO_PEERCRED"):
        return None
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    _pid, uid, _gid = struct.unpack("3i", raw)
    return int(uid)


class Server:
    def __init__(self, coord: Coordinator) -> None:
        self.coord = coord
        self.clients: set[Client] = set()
        self.streams: set[Client] = set()
        #: The first request is a step of the coordinator's start (`co.request` in the trace).
        self._first = True
        #: One handler per request of `protocol.Op` but `events`, which takes over the line.
        self._handlers: dict[str, Handler] = {
            Op.PING: self._ping,
            Op.INFO: self._info,
            Op.CAPABILITIES: self._capabilities,
            Op.COMPLETE: self._complete,
            Op.SUBMIT: self._submit,
            Op.SUBMIT_WORDS: self._submit_words,
            Op.SUBMIT_PIPELINE: self._submit_pipeline,
            Op.OWN_JOB: self._own_job,
            Op.RERUN: self._rerun,
            Op.LIST: self._list,
            Op.LIST_JSON: self._list_json,
            Op.LIST_TABLE: self._list_table,
            Op.STATUS: self._status,
            Op.WAIT: self._wait,
            Op.KILL: self._kill,
            Op.CANCEL: self._cancel,
            Op.CANCEL_MANY: self._cancel_many,
            Op.CLEAN: self._clean,
            Op.CLEAN_MANY: self._clean_many,
            Op.PAUSE: self._pause,
            Op.RESUME: self._resume,
            Op.PAUSE_STATE: self._pause_state,
            Op.JOB_CHANGED: self._job_changed,
        }

    def active_count(self) -> int:
        """Connections that are not event streams (a reader does not keep a coordinator up)."""
        return len(self.clients) - len(self.streams)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        client = Client(reader, writer)
        uid = peer_uid(writer.get_extra_info("socket"))
        if uid is not None and uid not in (os.getuid(), 0):
            log(f"a process of uid {uid} connected, and only uid {os.getuid()} may; it was refused")
            client.close()
            return
        self.clients.add(client)
        try:
            await self._loop(client)
        except (ConnectionError, BrokenPipeError):
            pass
        except asyncio.CancelledError:
            raise
        except Exception:
            log_exception("a connection failed")
        finally:
            self.clients.discard(client)
            self.streams.discard(client)
            if client.wakes is not None:
                client.wakes.finish()
            client.close()
            self._release(client)

    async def _loop(self, client: Client) -> None:
        while not self.coord.stopping:
            try:
                await client.next_line()
                line = client.consume()
            except (ValueError, asyncio.LimitOverrunError):
                await client.send(protocol.error(
                    protocol.INTERNAL, "qex could not read this request: the line is too long"))
                return
            if not line:
                return
            if not line.strip():
                continue
            self.coord.touch()
            if self._first:
                self._first = False
                chaintrace.mark("co.request", "-")
            try:
                message = protocol.decode(line)
            except protocol.ProtocolError as exc:
                await client.send(protocol.error(protocol.INTERNAL,
                                                 f"qex could not read this request: {exc}"))
                continue
            op = message.get("op")
            if op == Op.EVENTS:
                await self._events(client, message)
                return
            handler = self._handlers.get(op) if isinstance(op, str) else None
            if handler is None:
                await client.send(protocol.unknown(op))
                continue
            try:
                answer = await handler(client, message)
            except Exception as exc:
                log_exception(f"the request `{op}` failed")
                answer = protocol.error(protocol.INTERNAL, f"qex could not handle `{op}`: {exc}")
            if answer is None:
                return  # the client went away while it waited
            if isinstance(answer, WithText):
                await client.send(answer.answer, answer.text)
            else:
                await client.send(answer)

    def _release(self, client: Client) -> None:
        """The connection ended: cancel the still-queued jobs it owned.

        Not when the coordinator itself stops: the owner reconnects to the next coordinator
        and owns its job again, so the job must still be there.
        """
        if self.coord.stopping:
            return
        for job_id in sorted(client.owned):
            job = self.coord.jobs.get(job_id)
            if job is not None and job.record.state == "queued":
                control.cancel(self.coord, job, error=control.OWNER_GONE)
        if not self.coord.has_work():
            self.coord.kick()  # lets the loop notice a replaced program once nobody talks

    # -- handlers ------------------------------------------------------------------------

    async def _ping(self, client: Client, message: dict[str, Any]) -> dict[str, Any]:
        return protocol.ok()

    async def _info(self, client: Client, message: dict[str, Any]) -> dict[str, Any]:
        return queries.handle_info(self.coord)

    async def _capabilities(self, client: Client, message: dict[str, Any]) -> dict[str, Any]:
        return queries.handle_capabilities(self.coord)

    async def _submit(self, client: Client, message: dict[str, Any]) -> dict[str, Any]:
        return handle_submit(self.coord, message, wakes=client.run_wakes(self.coord))

    async def _submit_words(self, client: Client, message: dict[str, Any]) -> dict[str, Any]:
        from qex.coordinator.submit_words import EACH_LINE_FIELD, handle_submit_words

        options = message.get("options")
        if isinstance(options, dict) and EACH_LINE_FIELD in options:
            from qex.coordinator.submit_lines import handle_submit_lines

            return await handle_submit_lines(self.coord, message)
        return handle_submit_words(self.coord, message)

    async def _rerun(self, client: Client, message: dict[str, Any]) -> dict[str, Any]:
        from qex.coordinator.submit_again import handle_rerun

        return handle_rerun(self.coord, message)

    async def _submit_pipeline(self, client: Client, message: dict[str, Any]
                               ) -> dict[str, Any]:
        from qex.coordinator.submit_pipeline import handle_submit_pipeline

        return await handle_submit_pipeline(self.coord, message)

    async def _own_job(self, client: Client, message: dict[str, Any]) -> dict[str, Any]:
        job_id = message.get("id")
        if not isinstance(job_id, str) or job_id not in self.coord.jobs:
            return protocol.error(protocol.NO_SUCH_JOB, f"there is no job with the id {job_id}")
        client.owned.add(job_id)
        return protocol.ok()

    async def _complete(self, client: Client, message: dict[str, Any]) -> dict[str, Any]:
        return queries.handle_complete(self.coord, message)

    async def _list(self, client: Client, message: dict[str, Any]) -> dict[str, Any]:
        return queries.handle_list(self.coord, message)

    async def _list_json(self, client: Client, message: dict[str, Any]) -> WithText:
        return WithText(*listing.handle_list_json(self.coord, message))

    async def _list_table(self, client: Client, message: dict[str, Any]) -> WithText:
        return WithText(*listing.handle_list_table(self.coord, message))

    async def _status(self, client: Client, message: dict[str, Any]) -> dict[str, Any]:
        return queries.handle_status(self.coord, message)

    async def _wait(self, client: Client, message: dict[str, Any]) -> dict[str, Any] | None:
        coord = self.coord
        job_id = message.get("id")
        if not isinstance(job_id, str) or job_id not in coord.jobs:
            return protocol.error(protocol.NO_SUCH_JOB, f"there is no job with the id {job_id}")
        while True:
            job = coord.jobs.get(job_id)
            if job is None:
                return protocol.error(protocol.NO_SUCH_JOB, (
                    f"the record of the job {job_id} was deleted while this command waited"))
            coord.refresh(job)
            if job.final:
                return protocol.answer(Result.STATUS, status=job.record.to_dict())
            if await self._job_moves(client, job_id, WAIT_RECHECK_SECS) or coord.stopping:
                return None

    async def _job_moves(self, client: Client, job_id: str, timeout: float) -> bool:
        """Wait for the job's next change of state (or `timeout`); True when the client hung
        up first, and there is nobody to answer."""
        future = self.coord.add_waiter(job_id)
        try:
            return await client.hung_up_or(future, timeout)
        finally:
            self.coord.drop_waiter(job_id, future)

    async def _kill(self, client: Client, message: dict[str, Any]) -> dict[str, Any] | None:
        """A job that is starting has no process to signal yet, and will have one within
        moments: the kill waits for it (woken by the job's next change of state, for up to
        `control.STARTING_KILL_SECS`), so that `qex kill` right after `qex submit`, or a
        Ctrl-C of `qex run`, stops the job instead of being refused."""
        coord = self.coord
        job_id = message.get("id")
        deadline = asyncio.get_running_loop().time() + control.STARTING_KILL_SECS
        while isinstance(job_id, str):
            job = coord.jobs.get(job_id)
            if job is None or not control.has_no_process_yet(coord, job):
                break
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                break
            if await self._job_moves(client, job_id, left):
                return None  # the kill is dropped with the request
            if coord.stopping:
                break
        return control.handle_kill(coord, message)

    async def _cancel(self, client: Client, message: dict[str, Any]) -> dict[str, Any]:
        return control.handle_cancel(self.coord, message, wakes=client.run_wakes(self.coord))

    async def _cancel_many(self, client: Client, message: dict[str, Any]) -> dict[str, Any]:
        """The cancels of `qex cancel GROUP` (or of several ids) in one request: the jobs'
        records are written in batches whose syncs go side by side, where a request per job
        waited for its own."""
        wakes = client.run_wakes(self.coord)
        return await self._in_batches(message, lambda job_ids: control.cancel_batch(
            self.coord, job_ids, wakes=wakes))

    async def _clean_many(self, client: Client, message: dict[str, Any]) -> dict[str, Any]:
        """The deletions of `qex clean` and `qex gc` in one request, where a request per
        record cost the command and the coordinator a round trip each."""
        return await self._in_batches(message, lambda job_ids: [
            control.handle_clean(self.coord, {"id": job_id}) for job_id in job_ids])

    async def _in_batches(self, message: dict[str, Any],
                          batch: Callable[[list[Any]], list[dict[str, Any]]]
                          ) -> dict[str, Any]:
        """A request that names many jobs (`ids`), answered job by job in order by `batch`,
        `control.MANY_BATCH` jobs at a time; other connections are served between batches."""
        job_ids = message.get("ids")
        if not isinstance(job_ids, list):
            return protocol.error(protocol.REFUSED, (
                f"the request `{message.get('op')}` names its jobs in `ids`, a list of job "
                "ids; this one has none, so nothing was done"))
        answers: list[dict[str, Any]] = []
        for start in range(0, len(job_ids), control.MANY_BATCH):
            if start:
                await asyncio.sleep(0)
            answers += batch(job_ids[start:start + control.MANY_BATCH])
        return protocol.ok(answers=answers)

    async def _clean(self, client: Client, message: dict[str, Any]) -> dict[str, Any]:
        return control.handle_clean(self.coord, message)

    async def _pause(self, client: Client, message: dict[str, Any]) -> dict[str, Any]:
        try:
            pausing.pause(self.coord, message)
        except pausing.PauseError as exc:
            return protocol.error(protocol.WRONG_STATE, str(exc))
        # The jobs that go on running, which the command names: without this count it asked
        # `info` as well, and waited for the pass that the pause had woken.
        return {**pausing.state_answer(self.coord), "jobs_running": self.coord.running_count()}

    async def _resume(self, client: Client, message: dict[str, Any]) -> dict[str, Any]:
        try:
            pausing.resume(self.coord, message)
        except pausing.PauseError as exc:
            return protocol.error(protocol.WRONG_STATE, str(exc))
        return pausing.state_answer(self.coord)

    async def _pause_state(self, client: Client, message: dict[str, Any]) -> dict[str, Any]:
        return pausing.state_answer(self.coord)

    async def _job_changed(self, client: Client, message: dict[str, Any]) -> dict[str, Any]:
        chaintrace.mark("co.note", str(message.get("id")))
        job = self.coord.jobs.get(message.get("id") or "")
        if job is not None and message.get("pending") is not None:
            if take_pending(job, message.get("pending"), message.get("note")):
                chaintrace.mark("co.ending", job.id)
                self.coord.kick()  # its claims came free: the next job may start
            self.coord.publish(job)
            return protocol.ok()
        if job is not None:
            before = job.record.state
            if self.coord.refresh(job, sent_record(message.get("record"))) and \
                    job.record.state != before:
                log(f"the job {label(job.record)} is {job.record.state}")
            chaintrace.mark(f"co.adopted.{job.record.state}", job.id)
        return protocol.ok()

    # -- the event stream ----------------------------------------------------------------

    async def _events(self, client: Client, message: dict[str, Any]) -> None:
        hub = self.coord.events
        self.streams.add(client)
        now = self.coord.now()
        cursor, gaps = hub.open_cursor(message.get("since"), now)
        writer = client.writer
        writer.write(wrap(hub.header(now)))
        for gap in gaps:
            writer.write(wrap(gap))
        while True:
            if not await self._drain(client):
                return
            lines = hub.take(cursor, self.coord.now())
            if lines:
                writer.write(b"".join(lines))
                continue
            if hub.closed_reason is not None:
                writer.write(wrap(hub.bye()))
                await self._drain(client)
                return
            if await client.hung_up_or(hub.changed(), None, discard_input=True):
                return

    async def _drain(self, client: Client) -> bool:
        """Let the buffered lines leave; a reader that takes longer than the limit is dropped."""
        try:
            await asyncio.wait_for(client.writer.drain(), EVENT_WRITE_TIMEOUT)
        except (TimeoutError, ConnectionError, BrokenPipeError):
            return False
        return True

    async def say_goodbye(self, grace: float) -> None:
        """The coordinator stops: give event readers a moment to receive `bye`."""
        if not self.streams:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while self.streams and loop.time() < deadline:
            await asyncio.sleep(0.02)


def sent_record(raw: object) -> JobStatus | None:
    """The record a supervisor's note carried (`notify.job_changed`), or None to read the
    file: an older supervisor sends none, and a record that does not parse is not trusted."""
    if not isinstance(raw, dict):
        return None
    try:
        return JobStatus.from_dict(raw)
    except (TypeError, ValueError):
        return None


def take_pending(job: Job, raw: object, note: object) -> bool:
    """A supervisor says its result is decided and about to be written (no `note`), or that
    it waits for the disk (`note` says why): keep it, and show the sentence. True when the
    job's claims came free with it.

    The record in memory stays what the disk says (the job is not final until the result is
    written, so no waiter is told a result that a crash could still lose); only its `error`
    carries the sentence. Its processes have ended, so it no longer holds its claims
    (`Coordinator.holding_jobs`): the next job starts while the result syncs. Should the
    supervisor die before it can write, the reaper records the kept result.
    """
    from qex.core.names import printable_line

    if not isinstance(raw, dict) or job.final:
        return False
    try:
        record = JobStatus.from_dict(raw)
    except (TypeError, ValueError):
        return False
    if record.id != job.id:
        return False
    freed = job.pending is None
    job.pending = record
    job.pending_note = printable_line(note) if isinstance(note, str) else None
    if job.pending_note:
        job.record.error = job.pending_note
    return freed
