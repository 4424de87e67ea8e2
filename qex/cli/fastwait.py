"""`qex wait ID...` for short jobs, through `qex.cli.wire` alone.

An agent's loop runs `qex submit` and then `qex wait` on the id (or on the ids of a few
submits, or on the group id of a fan-out), and a short job has often stopped by then, or
stops within a moment. For that case (words that each name one job by its id, the start of
its id or its name, or one group by its id or name: at most `LEAN_WAIT_MOST` jobs; jobs
that completed or failed with their own exit codes, no error text, plain names; a queue
that is not paused) this prints the lines that `qex.cli.wait_core` prints, with its exit
code, from one `info` and one look-up per word; for jobs that are `starting` or `running`,
it also sends the `wait` request for each on the same connection and waits up to
`LIVE_WAIT_SECS` for them all (an answer comes when its job is final), with SIGINT and
SIGTERM ending the wait as the full wait ends it (its two lines, 122) from then on. A
`--timeout` shorter than that second bounds the wait, and its end is reported as the full
wait reports it (124). Every other case (a queued job, whose reason the full wait narrates;
a word that names several jobs or groups, or none; a job that runs longer; an end that is
not plain) returns None having printed and changed nothing (a `wait` request changes
nothing, and closing the connection drops it), and the full wait runs.

`wait --next` takes the same look-ups, and answers here when one of the named jobs has
already ended plainly, or when the first of them to end (each awaited on a connection of
its own) ends plainly within the same second (`wait_next`).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from qex.cli.wire import Wire

_HEX = frozenset("0123456789abcdef")
#: How long a job that is starting or running may take to end before the full wait (with
#: its narration and its recovery when the coordinator goes away) takes over; for several
#: jobs, how long they may take all together.
LIVE_WAIT_SECS = 1.0
#: The most words, and the most jobs, one lean wait looks at (one look-up per word, and a
#: `wait` per live job); more go to the full wait, which asks for them with one `list`.
LEAN_WAIT_MOST = 32
#: The states in which a job has (or is about to have) a process: a `wait` answers at its end.
LIVE_STATES = frozenset({"starting", "running"})
_NAME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def live_budget(limit: float | None) -> float:
    """How long a lean wait may take: `LIVE_WAIT_SECS`, or the reader's limit when shorter."""
    return LIVE_WAIT_SECS if limit is None else min(LIVE_WAIT_SECS, limit)


def left_of(limit: float | None, since: float) -> float | None:
    """What is left of the reader's limit (None: there is none) that began at `since`
    (`time.monotonic`): the full wait that takes over gets that much."""
    if limit is None:
        return None
    import time

    return max(0.0, limit - (time.monotonic() - since))


def is_full_id(word: str) -> bool:
    parts = word.split("-")
    return [len(p) for p in parts] == [8, 4, 4, 4, 12] and all(set(p) <= _HEX for p in parts)


def simple_result(record: dict[str, Any]) -> tuple[str, int] | None:
    """(the result line, the exit code) of a plainly finished job, else None."""
    name = record.get("name") or "job"
    job_id = record.get("id")
    if not isinstance(name, str) or not isinstance(job_id, str) or record.get("error"):
        return None
    if not set(name) <= _NAME or name.startswith("-") or len(name) > 64:
        return None
    state, code = record.get("state"), record.get("exit_code")
    if state == "completed":
        text, result = "exit 0", 0
    elif state == "failed" and isinstance(code, int) and not isinstance(code, bool) \
            and 0 < code <= 96:
        text, result = f"exit {code}", code
    else:
        return None
    return f"{job_id[:8]} ({name}) {state}: {text}", result


def announce(job_id: str) -> None:
    """`qex: job <id>` on stderr: with --wait/--follow/run the id never goes to stdout."""
    import sys

    sys.stderr.write(f"qex: job {job_id}\n")
    sys.stderr.flush()


def stop_signals(job_ids: list[str], group: str | None = None) -> Callable[[], None]:
    """From now on the first SIGINT or SIGTERM ends the command as the full wait ends it
    (`qex.cli.jobcmd.interruptible`: its two lines, then 122; the handlers are then the
    defaults, so a second one ends the command at once). Kept when the full wait takes over,
    until it puts its own in place, so that no signal falls between the two. Returns the
    call that puts the previous handlers back. A signal that the command was started with
    ignored stays ignored, as in the full wait (`wait_ends.stop_signals`)."""
    import _signal  # type: ignore[import-not-found]  # `signal` would import `enum`

    watched = tuple(signum for signum in (_signal.SIGINT, _signal.SIGTERM)
                    if _signal.getsignal(signum) != _signal.SIG_IGN)
    previous = {signum: _signal.getsignal(signum) for signum in watched}

    def handler(signum: int, _frame: object) -> None:
        for other in watched:
            _signal.signal(other, _signal.SIG_DFL)
        from qex.cli.exits import WAIT_INTERRUPTED
        from qex.cli.wait_ends import report_interrupted

        report_interrupted(job_ids, group)
        raise SystemExit(WAIT_INTERRUPTED)

    def restore() -> None:
        for signum, old in previous.items():
            _signal.signal(signum, old)

    for signum in watched:
        _signal.signal(signum, handler)
    return restore


def wait_finished(words: list[str], *, quiet: bool, limit: float | None = None) -> int | None:
    """The exit code after printing the results, or None for the full wait. `limit`: the
    reader's `--timeout`, which shortens the wait for live jobs when it is below
    `LIVE_WAIT_SECS` (the caller hands what is left of it to the full wait)."""
    if not words or len(words) > LEAN_WAIT_MOST:
        return None
    from qex.cli.wire import Wire

    wire = Wire.connect()
    if wire is None:
        return None
    restore: list[Callable[[], None]] = []
    try:
        named = _plain_records(wire, words)
        if named is None:
            return None
        job_ids, records, group = named.job_ids, named.records, named.group
        budget = live_budget(limit)
        if not _wait_live(wire, named, restore, budget):
            if limit is None or limit > LIVE_WAIT_SECS:
                return None
            # The reader's limit ran out with a job still live: the full wait's verdict.
            for put_back in restore:
                put_back()
            from qex.cli.exits import WAIT_TIMEOUT
            from qex.cli.wait_ends import report_timeout

            report_timeout(job_ids, group)
            return WAIT_TIMEOUT
    finally:
        wire.close()
    results = [simple_result(r) for r in records]
    if any(found is None for found in results):
        return None
    for put_back in restore:
        put_back()
    lines = [found for found in results if found is not None]
    if not quiet:
        import sys

        sys.stdout.write("".join(line + "\n" for line, _ in lines))
        sys.stdout.flush()
    from qex.core.exit_band import first_nonzero

    return first_nonzero([code for _, code in lines])


def wait_next(words: list[str], *, quiet: bool, limit: float | None = None) -> int | None:
    """`wait --next`: the first of the named jobs to end, with the jobs still live listed
    to wait on again. A job that has already ended plainly is the answer at once (the first
    such in the order named, as `Waiter.wait_next` picks it). When all are starting or
    running, a `wait` goes to the coordinator for each, on a connection of its own so that
    the first end answers first, for up to `LIVE_WAIT_SECS` (or the reader's shorter
    `--timeout`, whose end is reported as the full wait reports it). None (having printed
    nothing) for the full wait: a job is queued (the full wait narrates its reason), an end
    is not plain, no job ends in that time, or a word needs the full look-up."""
    if not words or len(words) > LEAN_WAIT_MOST:
        return None
    from qex.cli.wire import Wire

    wire = Wire.connect()
    if wire is None:
        return None
    wires = [wire]
    try:
        named = _plain_records(wire, words)
        if named is None:
            return None
        job_ids, records, group = named.job_ids, named.records, named.group
        if all(r.get("state") in LIVE_STATES for r in records):
            restore = stop_signals(job_ids, group)
            first = _first_end(wires, job_ids, live_budget(limit))
            if first is None:
                if limit is None or limit > LIVE_WAIT_SECS:
                    return None
                restore()  # the reader's limit ran out: the full wait's verdict
                from qex.cli.exits import WAIT_TIMEOUT
                from qex.cli.wait_ends import report_timeout

                report_timeout(job_ids, group)
                return WAIT_TIMEOUT
            index, record = first
            records[index] = record
            if simple_result(record) is None:
                return None  # the full wait words this end (its handlers replace ours)
            restore()
    finally:
        for each in wires:
            each.close()
    ended = [simple_result(r) for r in records if r.get("state") not in LIVE_STATES]
    if not ended or ended[0] is None:
        return None
    import sys

    line, code = ended[0]
    if not quiet:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    live = [i for i, r in zip(job_ids, records, strict=True) if r.get("state") in LIVE_STATES]
    if live:
        sys.stderr.write("".join(f"qex: {text}\n" for text in still_live_lines(live)))
        sys.stderr.flush()
    return code


def _first_end(wires: list[Wire], job_ids: list[str],
               budget: float) -> tuple[int, dict[str, Any]] | None:
    """Send a `wait` for each job (the first on `wires[0]`, each other on a new connection,
    added to `wires` for the caller to close) and return the index and the final record of
    the first job whose answer comes, within `budget` seconds. Of answers that come
    together, the job named first wins, as in `Waiter.wait_next`. None when none came in
    time, or a connection or an answer failed (the full wait then starts over)."""
    import select

    from qex.cli.wire import QUICK_ANSWER_SECS, Wire, status_record

    poller = select.poll()  # not `select.select`: a descriptor may be numbered past 1023
    by_descriptor = {}
    for index, job_id in enumerate(job_ids):
        wire = wires[0] if index == 0 else Wire.connect()
        if wire is None:
            return None
        if index:
            wires.append(wire)
        if not wire.send({"op": "wait", "id": job_id}):
            return None
        by_descriptor[wire.sock.fileno()] = (index, wire)
        poller.register(wire.sock.fileno(), select.POLLIN)
    ready = poller.poll(max(0, int(budget * 1000)))
    ends = []
    for descriptor, _events in ready:
        index, wire = by_descriptor[descriptor]
        record = status_record(wire.answer(QUICK_ANSWER_SECS))
        if record is None or record.get("state") in LIVE_STATES:
            return None
        ends.append((index, record))
    return min(ends, key=lambda end: end[0]) if ends else None


def still_live_lines(job_ids: list[str]) -> list[str]:
    """What `wait --next` says of the jobs that had not stopped when it returned."""
    return [f"{len(job_ids)} job(s) did not stop, and no command watches them now; wait again:",
            "  qex wait --next " + " ".join(job_ids)]


class _Named:
    """What the words of a lean wait name: the jobs' ids and records, each job once in the
    order named (a group's stages in submission order), and the group when the one word
    was a group (the full wait's hints then name it: `qex wait GROUP`)."""

    __slots__ = ("group", "job_ids", "records")

    def __init__(self) -> None:
        self.job_ids: list[str] = []
        self.records: list[dict[str, Any]] = []
        self.group: str | None = None


def _plain_records(wire: Wire, words: list[str]) -> _Named | None:
    """The jobs that `words` name, when the queue is not paused, there are at most
    `LEAN_WAIT_MOST`, and every one is live or ended plainly; else None (a queued job's
    reason is the full wait's to narrate, and a word that names several jobs or groups, or
    none, is the full wait's to resolve)."""
    from qex.cli.fastread import word_jobs

    info = wire.request({"op": "info"})
    if not isinstance(info, dict):
        info.close()
        return None
    if info.get("result") != "info" or info.get("paused") is not None:
        return None
    named = _Named()
    for word in words:
        found = word_jobs(wire, word)  # an id, its start (`1a2b3c4d`), a name, or a group
        if found is None:
            return None
        records, group = found
        if len(words) == 1:
            named.group = group
        for record in records:
            job_id = record["id"]
            if job_id in named.job_ids:
                continue
            if record.get("state") not in LIVE_STATES and simple_result(record) is None:
                return None
            named.job_ids.append(job_id)
            named.records.append(record)
    return named if len(named.job_ids) <= LEAN_WAIT_MOST else None


def _wait_live(wire: Wire, named: _Named, restore: list[Callable[[], None]],
               budget: float) -> bool:
    """Wait for the live jobs, `budget` seconds for all of them; False when one did not end
    in time. The stop signals are the wait's from the first `wait` request on (`restore`
    receives the call that puts the old handlers back)."""
    import time

    from qex.cli.wire import status_record

    until = time.monotonic() + budget
    for index, record in enumerate(named.records):
        if record.get("state") not in LIVE_STATES:
            continue
        if not restore:
            restore.append(stop_signals(named.job_ids, named.group))
        left = until - time.monotonic()
        ended = status_record(wire.ask({"op": "wait", "id": named.job_ids[index]}, left)) \
            if left > 0 else None
        if ended is None:
            return False
        named.records[index] = ended
    return True
