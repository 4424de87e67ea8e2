"""The read and stop commands through `qex.cli.wire`, while a coordinator listens.

`qex status WORD` (with `--json`, `--wait`, `--no-logs`, a stream and one range of its
logs), `qex list` (with its filters), `qex kill WORD ...` and `qex cancel WORD ...` (a job or
a group's stages) and `qex info` need a request or two and a few lines of output, but the
full bodies import the client, paths, typed records and enums, which cost several times the
interpreter's start-up. Here each asks the coordinator over `wire` (C modules only) and
prints with the same functions as the full bodies: `render_status` and `render_table` on a
`record_view.JobView`, `record_json` and `jsontext` for JSON, `stop_core`'s sentences.

Every function returns None, having printed nothing and changed nothing, whenever the case
is not plain: no coordinator listens (the full body then reads the disk and judges stale
records, `qex.cli.stale`), a word that names nothing or more than one job or group, a
record whose logs `fastlogs.status_excerpts` leaves to the full body, a slow answer to a
question. The caller then runs the full body, which asks again.
"""

from __future__ import annotations

from qex.core.state_words import FINAL_WORDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, TypeVar

    from qex.cli.fastlogs import StreamExcerpt
    from qex.cli.wire import Wire
    from qex.client.connection import Connection
    from qex.core.logsel import Selection

    _Found = TypeVar("_Found")

#: The states in which a job will not change again (one definition: `qex.core.state_words`).
FINAL_STATES = FINAL_WORDS


def ask(wire: Wire, message: dict[str, Any]) -> dict[str, Any] | None:
    """The answer to one request, or None when it did not come at once (the full client has
    taken the line over; it is closed here, and the caller gives up)."""
    answer = wire.request(message)
    if isinstance(answer, dict):
        return answer
    answer.close()
    return None


def word_jobs(wire: Wire, word: str) -> tuple[list[dict[str, Any]], str | None] | None:
    """The records of what `word` names, and the group when it named one: one job by its
    whole id (`status`), or by the start of its id or its name, or a group's stages in
    submission order by the group's id or name (`list` with the word, decided by
    `job_words.pick`, the rule of the full body). None whenever the full body must decide:
    the word names more than one job or group, or none, or an answer was not plain."""
    from qex.cli.fastwait import is_full_id

    if is_full_id(word):
        from qex.cli.wire import status_record

        asked = ask(wire, {"op": "status", "id": word})
        if asked is None:
            return None  # a slow answer: the line is the full client's now, and closed
        record = status_record(asked)
        if record is not None:
            return [record], None
        if asked.get("kind") != "no_such_job":  # protocol.NO_SUCH_JOB; else a group's id
            return None
    elif not word or word != word.strip():
        return None
    answer = ask(wire, {"op": "list", "word": word})  # protocol.list_jobs(word)
    jobs = answer.get("jobs") if answer is not None and answer.get("result") == "jobs" else None
    if not isinstance(jobs, list) or not all(
            isinstance(r, dict) and isinstance(r.get("id"), str) for r in jobs):
        return None
    from qex.core import job_words

    found = job_words.pick(jobs, word)
    if found.kind == job_words.ONE_JOB:
        return found.jobs, None
    if found.kind == job_words.ONE_GROUP:
        return found.jobs, found.group
    return None


def job_record(wire: Wire, word: str) -> dict[str, Any] | None:
    """The record of the one job that `word` names by its whole id, the start of it, or its
    name; None for a group (a command that takes one job refuses it, in the full body) and
    for whatever `word_jobs` leaves to the full body."""
    found = word_jobs(wire, word)
    return found[0][0] if found is not None and found[1] is None else None


def job_id_of_word(word: str) -> str | None:
    """The whole id of the one job that `word` names (as `job_record` decides), asked of a
    listening coordinator; None for the full body."""
    record = _looked_up(job_record, word)
    job_id = record.get("id") if record is not None else None
    return job_id if isinstance(job_id, str) else None


def _connect() -> Wire | None:
    from qex.cli.wire import Wire

    return Wire.connect()


def _looked_up(find: Callable[[Wire, str], _Found | None], word: str) -> _Found | None:
    """`find`'s record for `word` on a connection of its own; None without a coordinator."""
    wire = _connect()
    if wire is None:
        return None
    try:
        return find(wire, word)
    finally:
        wire.close()


def status(word: str, *, as_json: bool, wait: bool, no_logs: bool, sel: Selection | None = None,
           streams: tuple[str, ...] | None = None) -> int | None:
    """`qex status WORD [--json] [--wait] [--no-logs]`, with the lines `sel` chooses of
    `streams`, for one job or a group's stages: the exit code, or None for the full body.

    Only records that a wait would not wait for are printed here, with the excerpts of their
    logs that `fastlogs.status_excerpts` can read; as `status_print.print_records` does, a
    group's stages are text blocks apart by a blank line, or one JSON array."""
    found = _looked_up(word_jobs, word)
    if found is None:
        return None
    records, group = found
    if wait and any(r.get("state") not in FINAL_STATES for r in records):
        return None
    shown: list[Any] = []
    for record in records:
        one = record_shown(record, as_json=as_json, no_logs=no_logs, sel=sel, streams=streams)
        if one is None:
            return None
        shown.append(one)
    if as_json:
        from qex.core.jsontext import dumps

        text = dumps(shown if group is not None else shown[0])
    else:
        text = "\n\n".join(shown)
    import sys

    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    if not wait:
        return 0
    from qex.core.exit_band import exit_code_for, first_nonzero

    return first_nonzero([exit_code_for(r) for r in records])


def record_text(record: dict[str, Any], *, as_json: bool, no_logs: bool,
                sel: Selection | None = None, streams: tuple[str, ...] | None = None
                ) -> str | None:
    """What `qex status` prints for one job (`status_print.print_records`), or None when
    only the full body can word its logs (`fastlogs.status_excerpts` leaves them to it)."""
    shown = record_shown(record, as_json=as_json, no_logs=no_logs, sel=sel, streams=streams)
    if shown is None:
        return None
    if not as_json:
        return str(shown)
    from qex.core.jsontext import dumps

    return dumps(shown)


def record_shown(record: dict[str, Any], *, as_json: bool, no_logs: bool,
                 sel: Selection | None = None, streams: tuple[str, ...] | None = None
                 ) -> Any:
    """One record as `qex status` shows it: its JSON document, or its block of text; None
    when only the full body can word its logs."""
    excerpts: list[StreamExcerpt] = []
    if not no_logs:
        from qex.cli.fastlogs import status_excerpts
        from qex.core.log_words import STATUS_STREAMS

        found = status_excerpts(record, sel, streams or STATUS_STREAMS)
        if found is None:
            return None
        excerpts = found
    if as_json:
        from qex.core.record_json import display_record

        document = display_record(record)
        if excerpts:  # `render_status.status_json`
            document["logs"] = {e.stream: e.as_json() for e in excerpts}
        return document
    import time

    from qex.cli.render_status import status_text
    from qex.core.record_view import JobView

    return status_text(JobView(record), now=time.time(),
                       excerpts=[e.as_text() for e in excerpts])


def info_answer(*, start: bool) -> dict[str, Any] | None:
    """The coordinator's `info` answer (`qex info`), or None for the full client: nobody
    listens and none may be started, the socket path is unusual, or the answer was slow or
    not the plain one (the full client then asks again and says why). `start`: when nobody
    listens, start a coordinator, as the full client would."""
    from qex.cli.wire import Wire

    wire = Wire.connect(start=start)
    if wire is None:
        return None
    try:
        answer = ask(wire, {"op": "info"})  # protocol.info()
    finally:
        wire.close()
    return answer if answer is not None and answer.get("result") == "info" else None


def list_json() -> int | None:
    """`qex list --json` without filters: the exit code, or None for the full body."""
    return _list(as_json=True)


def list_text() -> int | None:
    """`qex list` without filters: the exit code, or None for the full body."""
    return _table({"op": "list_table"}, lambda: _list(as_json=False))  # protocol.list_table()


def _table(message: dict[str, Any], older: Callable[[], int | None]) -> int | None:
    """The table of `qex list` from the rows the coordinator made (`protocol.list_table`):
    the exit code, or None for the full body (which also words a group that is not there).
    A coordinator older than that request refuses it, and `older` then draws the table
    from the records, as before."""
    wire = _connect()
    if wire is None:
        return None
    try:
        got = wire.request_text(message)
    finally:
        wire.close()
    if got is None:
        return None
    answer, document = got
    if answer.get("result") == "error":
        return None if answer.get("kind") == "no_such_job" else older()
    if answer.get("result") != "jobs_table":
        return None
    return _show_table(answer, document)


def _show_table(answer: dict[str, Any], document: bytes) -> int | None:
    """Print what `_show_listing` prints for the table, from the coordinator's rows; None
    (before anything is printed) when the answer is not of the shape this command knows."""
    from qex.cli.wire import decode_array

    rows = decode_array(document)
    pools, pauses = answer.get("pools", []), answer.get("pauses")
    damaged = answer.get("damaged", [])
    if (rows is None or not isinstance(pools, list) or not isinstance(damaged, list)
            or not all(isinstance(row, list) and len(row) == 7
                       and all(type(cell) is str for cell in row) for row in rows)
            or not (pauses is None or isinstance(pauses, dict))):
        return None
    groups = answer.get("groups")
    note = None
    if isinstance(groups, list) and len(groups) > 1:
        from qex.core.job_filters import several_groups_line

        note = several_groups_line(str(answer.get("group")), [str(g) for g in groups])
    found = _Listing([], None, damaged, pauses)
    return _show_listing(found, [], as_json=False, note=note,
                         table=(rows, [str(line) for line in pools]))


class _Listing:
    """What `list_core` asks the coordinator for: the records (or, for `--json`, the
    document the coordinator wrote), the damaged entries and the pauses.

    The document's records went through `display_record`, whose rules the table applies
    too and which change nothing when applied twice (a unit test holds the two tables
    equal), so the records decoded from it serve a coordinator older than `list_table`."""

    def __init__(self, records: list[dict[str, Any]], document: bytes | None,
                 damaged: list[Any], pauses: dict[str, Any] | None) -> None:
        self.records, self.document = records, document
        self.damaged, self.pauses = damaged, pauses


def _listing(*, as_json: bool, message: dict[str, Any] | None = None) -> _Listing | None:
    """The listing, or None when the full body must ask. With filters in `message` (a
    `list_json` request), `document` is the coordinator's chosen records; a coordinator that
    ignores the filters sends every record, which are then decoded for the caller to filter
    (`records`, with `document` None)."""
    wire = _connect()
    if wire is None:
        return None
    message = message or {"op": "list_json"}  # protocol.list_json()
    try:
        listed: dict[str, Any] | None = None
        document = None
        got = wire.request_text(message)
        if got is None:
            return None
        if got[0].get("result") == "jobs_json":
            listed, document = got
        elif got[0].get("result") != "error" or got[0].get("kind") == "no_such_job":
            return None  # no such group (the full body words it), or an unknown answer
        if listed is None:  # a coordinator older than `list_json`: ask for `list`
            listed = ask(wire, {"op": "list"})
            if listed is None or listed.get("result") != "jobs":
                return None
        pauses = listed.get("pauses")
        if not isinstance(pauses, dict):  # a coordinator that does not send them: ask
            asked, pauses = _pauses(wire)
            if not asked:
                return None
    finally:
        wire.close()
    jobs, damaged = listed.get("jobs"), listed.get("damaged")
    whole = len(message) == 1 or listed.get("filtered") is True
    if document is not None and not (as_json and whole):
        from qex.cli.wire import decode_array

        jobs, document = decode_array(document), None
        if jobs is None:
            return None
    records = [j for j in jobs if isinstance(j, dict)] if isinstance(jobs, list) else []
    return _Listing(records, document, damaged if isinstance(damaged, list) else [], pauses)


def _pauses(wire: Wire) -> tuple[bool, dict[str, Any] | None]:
    """(asked, the pause state): the state is None when the coordinator does not know
    pauses or answered with an error; `asked` is False when an answer did not come at once
    or was of the wrong kind (the full client words that)."""
    names = ask(wire, {"op": "capabilities"})
    if names is None:
        return False, None
    known = names.get("names") if names.get("result") == "capabilities" else None
    if not (isinstance(known, list) and "pause" in known):
        return True, None
    pauses = ask(wire, {"op": "pause_state"})
    if pauses is None or pauses.get("result") not in ("pause_state", "error"):
        return False, None
    return True, pauses if pauses.get("result") == "pause_state" else None


def list_filtered(*, as_json: bool, states: set[str], tags: tuple[str, ...],
                  group_word: str | None, cwd_dir: str | None, under_dir: str | None
                  ) -> int | None:
    """`qex list` with filters (`qex.core.job_filters.chosen_jobs`, as the full body filters):
    the exit code, or None for the full body, which also words a group that is not there.
    The coordinator chooses the jobs and makes the table's rows or the `--json` document; a
    coordinator older than those filters sends the records, and they are filtered here."""
    from qex.cli.common import canonical_dir

    here = canonical_dir(cwd_dir) if cwd_dir is not None else None
    top = canonical_dir(under_dir) if under_dir is not None else None
    filters: dict[str, Any] = {}  # as protocol.list_json(...) and list_table(...) add them
    for key, value in (("states", sorted(states)), ("tags", list(tags)), ("group", group_word),
                       ("cwd", here), ("under", top)):
        if value:
            filters[key] = value

    def chosen(found: _Listing) -> int | None:
        return _chosen_records(found, as_json=as_json, states=states, tags=tags,
                               group_word=group_word, cwd_dir=here, under_dir=top)

    if as_json:
        found = _listing(as_json=True, message={"op": "list_json", **filters})
        if found is None:
            return None
        if found.document is not None:
            return _show_listing(found, [], as_json=True, note=None)
        return chosen(found)

    def from_records() -> int | None:
        found = _listing(as_json=False)
        return None if found is None else chosen(found)

    return _table({"op": "list_table", **filters}, from_records)


def _chosen_records(found: _Listing, *, as_json: bool, states: set[str], tags: tuple[str, ...],
                    group_word: str | None, cwd_dir: str | None, under_dir: str | None
                    ) -> int | None:
    """Filter and print records that a coordinator older than the filters sent."""
    from qex.core.job_filters import chosen_jobs, several_groups_line

    several: list[str] = []
    try:
        chosen = chosen_jobs(found.records, states=states, tags=tags, group_word=group_word,
                             cwd_dir=cwd_dir, under_dir=under_dir, on_groups=several.extend)
    except LookupError:
        return None
    note = None
    if several and not as_json:
        note = several_groups_line(str(group_word), several)
    return _show_listing(found, chosen, as_json=as_json, note=note)


def _list(*, as_json: bool) -> int | None:
    found = _listing(as_json=as_json)
    if found is None:
        return None
    return _show_listing(found, found.records, as_json=as_json, note=None)


def _show_listing(found: _Listing, chosen: list[dict[str, Any]], *, as_json: bool,
                  note: str | None,
                  table: tuple[list[list[str]], list[str]] | None = None) -> int:
    """Print what `list_core.show_list` prints: the pause lines, the damaged records and
    `note` on stderr, then the chosen jobs (or the coordinator's own document, or the rows
    and pool lines of `table`, which the coordinator made)."""
    import sys
    import time

    from qex.cli.common import warn

    now = time.time()
    pauses = found.pauses
    if pauses is not None and (pauses.get("queue") or pauses.get("locks")):
        from qex.cli.queue_lines import pause_lines

        for line in pause_lines(pauses, now):
            warn(line)
    if found.damaged:
        from qex.cli.list_core import damaged_line

        for entry in found.damaged:
            if isinstance(entry, dict):
                warn(damaged_line(entry))
    if note is not None:
        warn(note)
    if table is not None:
        from qex.cli.render_table import rows_table_lines

        sys.stdout.write("\n".join(rows_table_lines(*table)) + "\n")
        sys.stdout.flush()
        return 0
    if found.document is not None:
        sys.stdout.flush()
        sys.stdout.buffer.write(found.document + b"\n")
        sys.stdout.buffer.flush()
        return 0
    from qex.core.record_json import sort_key

    chosen = sorted(chosen, key=sort_key)
    if as_json:
        from qex.cli.common import print_json
        from qex.core.record_json import display_record

        print_json([display_record(r) for r in chosen])
        return 0
    from qex.cli.render_table import table_lines

    sys.stdout.write("\n".join(table_lines(chosen, found.records, now)) + "\n")
    sys.stdout.flush()
    return 0


def refusal_of(answer: dict[str, Any]) -> tuple[str, str] | None:
    """(kind, message) of an `error` answer, as `qex.core.protocol.error_of` reads it (which
    imports `json` and `typing`); a unit test compares the two."""
    if answer.get("result") != "error":
        return None
    kind, text = answer.get("kind"), answer.get("message")
    return (kind if isinstance(kind, str) and kind else "internal",
            text if isinstance(text, str) and text else "the coordinator gave no reason")


def stop(words: Sequence[str], verb: str, signal: tuple[int, float] | None = None
         ) -> int | None:
    """`qex kill WORD ...` (`signal`: the number and the grace) or `qex cancel WORD ...` for
    jobs and groups named by their whole ids, the starts of them or their names: the exit
    code, or None (before anything was sent) for the full body.

    As in `stop_core`, every word is looked up before the first job is touched, each job is
    treated as `stop_core.stop_plan` says (once; a group's queued stages leave the queue,
    its stopped ones are reported), and the first refusal's code is the command's. A word
    that names nothing or several jobs hands the whole command over. An answer that does
    not come at once is read by the full client, which then carries the rest of the
    requests, so that nothing is sent twice."""
    wire = _connect()
    if wire is None:
        return None
    conn: Connection | None = None

    def ask(message: dict[str, Any]) -> dict[str, Any]:
        nonlocal conn
        if conn is not None:
            return conn.request(message)
        sent = wire.request(message)
        if isinstance(sent, dict):
            return sent
        conn = sent  # a slow answer: the full client reads it, and carries the rest
        return conn.answer(str(message["op"]))

    code = 0
    try:
        targets = _stop_targets(wire, words)
        if targets is None:
            return None
        from qex.cli.stop_core import REPORT, already_stopped, cancels, steps

        for step in steps(targets, verb):
            record, what = step[0]
            if what == REPORT:
                print(already_stopped(record), flush=True)
            elif len(step) > 1:
                refused = _cancel_run(ask, verb, [str(job["id"]) for job, _what in step])
                code = code or refused
            else:
                job_id = str(record["id"])
                op = "cancel" if cancels(what, verb) else verb
                message: dict[str, Any] = {"op": op, "id": job_id}  # protocol.kill / cancel
                if op == "kill" and signal is not None:
                    message.update(signal=signal[0], grace_secs=signal[1])
                refused = _stopped(verb, job_id, signal if op == "kill" else None, message,
                                   ask(message))
                code = code or refused
    finally:
        wire.close()
        if conn is not None:
            conn.close()
    return code


def _cancel_run(ask: Callable[[dict[str, Any]], dict[str, Any]], verb: str,
                job_ids: list[str]) -> int:
    """Several cancels in one `cancel_many` request (`stop_core.steps`), each job's line
    or refusal printed in order; a coordinator older than that request gets a `cancel` per
    job. The first refusal's code, or 0."""
    from qex.core.protocol import each_answer, unknown_request

    message = {"op": "cancel_many", "ids": job_ids}  # protocol.cancel_many
    answer = ask(message)
    each = each_answer(answer, len(job_ids)) if answer.get("result") == "ok" else None
    if each is None and not unknown_request(answer):
        from qex.client.connection import answers_of

        each = answers_of(message, answer, len(job_ids))  # raises the full client's error
    code = 0
    for index, job_id in enumerate(job_ids):
        message = {"op": "cancel", "id": job_id}  # protocol.cancel
        one = ask(message) if each is None else each[index]
        refused = _stopped(verb, job_id, None, message, one)
        code = code or refused
    return code


def _stop_targets(wire: Wire, words: Sequence[str]) -> list[tuple[dict[str, Any], str]] | None:
    """What `stop_core.stop_plan` does with the jobs that `words` name; None when a word
    needs the full body's look-up."""
    named: list[tuple[list[dict[str, Any]], str | None]] = []
    for word in words:
        found = word_jobs(wire, word)
        if found is None:
            return None
        named.append(found)
    from qex.cli.stop_core import stop_plan

    return stop_plan(named)


def _stopped(verb: str, job_id: str, signal: tuple[int, float] | None,
             message: dict[str, Any], answer: dict[str, Any]) -> int:
    """Print what `stop_core` prints for one job's answer; 0, or the code of its refusal.
    `signal` is None when the job was only taken out of the queue."""
    refused = refusal_of(answer)
    if refused is not None:
        from qex.cli.common import warn
        from qex.cli.exits import code_for
        from qex.client.errors import Refused
        from qex.core.names import printable_line

        warn(printable_line(refused[1]))
        return code_for(Refused(*refused), verb)
    if answer.get("result") != "ok":
        from qex.client.connection import check

        check(message, answer)  # raises the full client's error for this answer
    from qex.cli.stop_core import left_queue_line, signalled_line

    line = signalled_line(job_id, signal[0]) if signal is not None else left_queue_line(job_id)
    print(line, flush=True)
    return 0
