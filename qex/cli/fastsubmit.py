"""`qex submit` on the fast path: the coordinator builds the spec (`submit_words`).

The command sends what only it knows (its options, environment, directory and version);
the coordinator reads the config, measures the machine, asks the learner and builds the
spec with the same code the click path runs here. The output, the id file, the order of
the warnings and the exit codes are those of `qex.cli.submit_flow`.

A submit that does not wait (the id on stdout, or `--json`, with or without `--id-file`)
talks through `qex.cli.wire` and imports nothing else unless the answer carries a warning or
an error; so does `submit --wait` while its job ends
plainly within a second (`_lean_submit_and_wait`). When nobody listens, it starts the
coordinator itself (`Wire.connect(start=True)`, the full client's own start) and sends the
same request to it. The config file is then checked by the coordinator, which refuses to
start on a broken one; only when the start fails does this command read the file, to print
the sentence and the code (121) that a broken file always gave. This is the one place that
speaks the `submit_words` request, so it can move onto a typed client method on its own.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

    from qex.cli.fanout_output import FanoutReport
    from qex.cli.wire import Wire
    from qex.client.connection import Connection
    from qex.core.fanout_source import Part


def submit(params: dict[str, Any], options: dict[str, Any], *, wait: bool, quiet: bool,
           as_json: bool, wait_timeout: float | None, follow: bool = False,
           wire: Wire | None = None) -> int | None:
    """Submit one job; None (having sent nothing) when the click path must do it. `follow`:
    `qex run`, and `submit --follow`. `wire`: the connection `capable_wire` left open, for
    a submit that does not wait (the waits and the follow open their own)."""
    from qex import __version__

    try:
        cwd = os.getcwd()
    except OSError:
        close_wire(wire)
        return None
    from qex.core import protocol

    request = protocol.submit_words(options, environ=dict(os.environ), cwd=cwd,
                                    client_version=__version__)
    conn: Connection | None = None
    if follow:
        followed = _lean_submit_and_follow(request, params["id_file"], wait_timeout)
        if isinstance(followed, int):
            return followed
        answer, conn = followed
    elif not wait:
        answer = lean_request(request, wire)
    else:
        lean = _lean_submit_and_wait(request, params["id_file"], quiet=quiet, as_json=as_json,
                                     wait_timeout=wait_timeout)
        if isinstance(lean, int):
            return lean
        answer, conn = lean
    if answer is None:
        return None
    if protocol.unknown_request(answer):
        if conn is not None:
            conn.close()
        return None
    if not (wait or follow) and answer.get("result") == "submitted":
        job_id = answer.get("id")
        if isinstance(job_id, str):
            if answer.get("build_warnings") or answer.get("warning"):
                # A paused queue, a claim the budget cannot hold: `_finish`'s order, lightly.
                from qex.cli.common import print_warnings, warn

                for note in answer.get("build_warnings") or ():
                    warn(str(note))
                print_warnings(answer)
            _id_file(params["id_file"], job_id)
            if as_json:
                from qex.cli.common import print_json

                print_json({"id": job_id, "deduplicated": bool(answer.get("deduplicated"))})
                return 0
            sys.stdout.write(job_id + "\n")
            sys.stdout.flush()
            return 0
    return _finish(params, answer, conn, wait=wait, follow=follow, quiet=quiet,
                   as_json=as_json, wait_timeout=wait_timeout)


def lines_input(source: str) -> tuple[str, list[Part]] | None:
    """The `--each-line` input's text and its parts (`fanout_source.split_parts`; one part:
    the text goes whole in one request, as to a coordinator from before parts). None for
    the full path, which words what is wrong from the same bytes (`fanout_input` keeps what
    it read): an input that cannot be read, is over the cap or is not UTF-8, or a part over
    `PART_CHARS` (a line that long, or a run of blank and comment lines)."""
    from qex.cli.fanout_input import read_input
    from qex.core.fanout_source import MAX_INPUT_BYTES, PART_CHARS, split_parts

    try:
        data, _ = read_input(source)
        if len(data) > MAX_INPUT_BYTES:
            return None
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    parts = split_parts(text)
    if len(parts) == 1:
        return (text, parts) if len(text) <= PART_CHARS else None
    if any(len(part.text) > PART_CHARS for part in parts):
        return None
    return text, parts


def submit_lines(params: dict[str, Any], options: dict[str, Any], *, source: str,
                 max_jobs: int, read: tuple[str, list[Part]], wire: Wire | None = None
                 ) -> int | None:
    """`submit --each-line`: the input's text (`lines_input`) goes to the coordinator, which
    submits every line's job (`qex.coordinator.submit_lines`); this prints what
    `fanout_submit` prints, in its order, with `fanout_output`. None, having sent nothing,
    for the full path (no coordinator could be reached). `wire`: the connection that
    `capable_wire` left open, for the first request.

    An input of several parts goes in one request per part, all in one group that this
    command names (`protocol.EACH_LINE_PARTS`): each part's jobs are printed as its answer
    comes, and a refusal, a coordinator that goes away or a Ctrl-C between two parts ends
    the fan-out as the full path's loop ends it (the jobs already queued listed, with the
    way to remove them)."""
    text, parts = read
    try:
        cwd = os.getcwd()
    except OSError:
        close_wire(wire)
        return None
    from qex import __version__
    from qex.core import protocol

    def request(each_line: dict[str, Any]) -> dict[str, Any]:
        return protocol.submit_words({**options, "each_line": each_line},
                                     environ=dict(os.environ), cwd=cwd,
                                     client_version=__version__)

    if len(parts) > 1:
        return _submit_parts(params, parts, source=source, max_jobs=max_jobs,
                             request=request, wire=wire)
    answer = lean_request(request({"path": source, "text": text, "max_jobs": max_jobs}), wire)
    if answer is None:
        return None
    jobs = _queued_jobs(answer)
    from qex.cli.common import warn
    from qex.cli.fanout_output import FanoutReport

    warn(str(answer.get("summary")))
    report = FanoutReport(str(answer.get("group")), int(answer.get("total") or 0))
    _accept_part(report, answer, jobs)
    report.finish(str(answer.get("group_name")), params["id_file"])
    return 0


def _submit_parts(params: dict[str, Any], parts: list[Part], *, source: str, max_jobs: int,
                  request: Callable[[dict[str, Any]], dict[str, Any]], wire: Wire | None
                  ) -> int | None:
    """`submit_lines` for an input of several parts: one request each, in order."""
    from qex.cli.common import warn
    from qex.cli.fanout_output import FanoutReport
    from qex.client.errors import ClientError
    from qex.core.fanout_source import summary
    from qex.core.names import new_id

    group = new_id()
    total = sum(part.jobs for part in parts)
    report: FanoutReport | None = None
    answer: dict[str, Any] = {}
    try:
        for part in parts:
            each_line = {"path": source, "text": part.text, "max_jobs": max_jobs,
                         "part": {"group": group, "first": part.first, "total": total}}
            got = lean_request(request(each_line), wire)
            wire = None  # the first request's connection is closed with its answer
            if got is None:
                if report is None:
                    return None  # nothing was sent: the full path takes the command
                report.abort("qex lost the coordinator between two parts of the input",
                             _failed())
            answer = got
            if report is None:
                jobs = _queued_jobs(answer)  # a refusal before any job ends the command here
                warn(summary(total, sum(p.empty for p in parts),
                             sum(p.comments for p in parts)))
                report = FanoutReport(group, total)
            else:
                listed = answer.get("jobs")
                if not isinstance(listed, list):  # refused before this part's first job
                    answer = {"kind": "internal", **answer, "result": "error"}
                    listed = []
                jobs = [job if isinstance(job, dict) else {} for job in listed]
            _accept_part(report, answer, jobs)
    except KeyboardInterrupt:
        if report is None:
            raise
        from qex.cli.exits import interrupted

        sys.stderr.write("\n")
        report.abort("interrupted; the part that was on its way may have queued jobs of the "
                     "same group too", interrupted("submit"))
    except ClientError as exc:  # the full client, which read a slow answer, lost it
        if report is None:
            raise
        from qex.cli.exits import code_for
        from qex.core.names import printable_line

        report.abort(printable_line(exc.message), code_for(exc, "submit"))
    assert report is not None
    report.finish(str(answer.get("group_name")), params["id_file"])
    return 0


def _accept_part(report: FanoutReport, answer: dict[str, Any], jobs: list[dict[str, Any]]
                 ) -> None:
    """Print the jobs that one answer queued; a refusal in it ends the fan-out."""
    for job in jobs:
        report.accepted(str(job.get("name")), str(job.get("id")), job.get("warning"))
    from qex.cli.fastread import refusal_of

    refused = refusal_of(answer)
    if refused is not None:
        from qex.cli.exits import code_for
        from qex.client.errors import Refused
        from qex.core.names import printable_line

        report.abort(printable_line(refused[1]), code_for(Refused(*refused), "submit"))


def _failed() -> int:
    from qex.cli.exits import failed

    return failed("submit")


def submit_pipeline(file: str, *, name: str | None, id_file: str | None, as_json: bool
                    ) -> int | None:
    """`qex pipeline FILE`: the file's text goes to the coordinator, which builds and
    submits every stage (`qex.coordinator.submit_pipeline`); this prints what
    `pipeline_submit` prints, in its order, with `pipeline_output`. None, having sent
    nothing, for the full path: a file that `job_file_text` leaves to it, nobody listening,
    or a coordinator from before this request."""
    sent = job_file_text(file)
    if sent is None:
        return None
    from qex.cli.wire import Wire

    try:
        cwd = os.getcwd()
    except OSError:
        return None
    wire = Wire.connect()
    if wire is None:
        return None  # the full path starts the coordinator, after checking the config here
    from qex import __version__
    from qex.core import protocol

    request = protocol.submit_pipeline(sent, name=name, environ=dict(os.environ), cwd=cwd,
                                       client_version=__version__)
    answer = lean_request(request, wire)
    if answer is None:
        return None
    if protocol.unknown_request(answer):
        return None
    jobs = _queued_jobs(answer)
    from qex.cli.pipeline_output import PipelineReport

    report = PipelineReport(str(answer.get("group")))
    for job in jobs:
        report.accepted(str(job.get("name")), str(job.get("id")), job.get("warning"))
    from qex.cli.fastread import refusal_of

    refused = refusal_of(answer)
    if refused is not None:
        from qex.core.names import printable_line

        report.refused(printable_line(refused[1]), str(answer.get("stage")))
    report.finish(str(answer.get("group_name")), id_file, as_json=as_json)
    return 0


def _queued_jobs(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The jobs that the answer to a group's submission (a fan-out, a pipeline) lists, once
    the warnings of their build are printed; a refusal that came before any job was queued
    ends the command here."""
    jobs = answer.get("jobs")
    if not isinstance(jobs, list):
        refused_before_any(answer)
    from qex.cli.common import warn

    for note in answer.get("build_warnings") or ():
        warn(str(note))
    return [job if isinstance(job, dict) else {} for job in jobs]


def refused_before_any(answer: dict[str, Any]) -> NoReturn:
    """A refusal that came before anything was queued, as `_finish` words it: a build
    refusal (121; 127 for a word that names no job) or the coordinator's own."""
    from qex.cli.common import die
    from qex.core.exit_band import Exit

    message = str(answer.get("message") or "the coordinator gave no reason")
    if answer.get("build"):
        die(message, Exit.NO_SUCH_JOB if answer.get("not_found") else Exit.QEX_FAILED)
    from qex.core.names import printable_line

    die(printable_line(message),
        Exit.NO_SUCH_JOB if answer.get("kind") == "no_such_job" else Exit.QEX_FAILED)


#: The largest `--job` file whose text goes in the request; a larger one (a job file is a
#: few lines) is read by the full path, which also says what is wrong with it.
JOB_FILE_LEAN_BYTES = 256 * 1024


def job_file_text(typed: str) -> dict[str, str] | None:
    """`{"path", "source", "text"}` of a `--job` file for `submit_words`: the path as typed
    (the readers' sentences name it so), its absolute form, and its UTF-8 text. None for
    anything but a plain readable file of UTF-8 text within `JOB_FILE_LEAN_BYTES`: the full
    path then reads it, and words what is wrong (a FIFO is read there, once)."""
    import stat

    try:
        info = os.stat(typed)
        if not stat.S_ISREG(info.st_mode) or info.st_size > JOB_FILE_LEAN_BYTES:
            return None
        with open(typed, "rb") as handle:
            data = handle.read(JOB_FILE_LEAN_BYTES + 1)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if len(data) > JOB_FILE_LEAN_BYTES:
        return None
    return {"path": typed, "source": os.path.abspath(typed), "text": text}


def capable_wire(capabilities: list[str]) -> Wire | None:
    """A connection to a coordinator that says it can do each of `capabilities`
    (`protocol.DEPENDENCY_WORDS`, `protocol.JOB_FILE_TEXT`, `protocol.EACH_LINE_TEXT`), left
    open for the request that needs them: asked on the same connection, the question costs a
    round trip instead of a second connect (and a second accept in the coordinator).

    When nobody listens, one is started here, as for any submission (`_open_wire`): it comes
    from this installation, so it can, and the command does not load the full path (click)
    only to start it. None, with nothing left open, when the coordinator is older than one
    of them (it would refuse the request's fields as malformed, and the full path, which
    does that work in the command, takes the submission), or when no socket can be named."""
    wire = _open_wire()
    if wire is None:
        return None
    try:
        answer = wire.request({"op": "capabilities"})  # protocol.capabilities()
    except BaseException:
        wire.close()
        raise
    if not isinstance(answer, dict):
        answer.close()
        return None
    names = answer.get("names")
    if isinstance(names, list) and all(name in names for name in capabilities):
        return wire
    wire.close()
    return None


def close_wire(wire: Wire | None) -> None:
    """Close the connection that `capable_wire` left open, when a caller will not use it."""
    if wire is not None:
        wire.close()


def lean_request(request: dict[str, Any], wire: Wire | None = None) -> dict[str, Any] | None:
    """The answer through `qex.cli.wire` (on `wire`, when the caller holds one open), or
    through the full client when that cannot."""
    wire = wire or _open_wire()
    if wire is None:
        conn = _connect()
        return None if conn is None else _guarded(lambda: conn.request(request))
    answer = wire.request(request)
    if isinstance(answer, dict):
        wire.close()
        return answer
    return _guarded(lambda: answer.answer(str(request["op"])))


def _lean_submit_and_wait(request: dict[str, Any], id_file: str | None, *, quiet: bool,
                          as_json: bool, wait_timeout: float | None
                          ) -> int | tuple[dict[str, Any] | None, Connection | None]:
    """`submit --wait` through `qex.cli.wire`: the exit code when the job ends plainly within
    `fastwait.LIVE_WAIT_SECS` (and within `--wait-timeout`); otherwise the submit's answer and
    the connection that `_finish` waits on (None and None when nothing was sent, for the click
    path). A `--wait-timeout` counts from the answer, as the full wait counts it, so the
    full wait that takes over gets what is left of it.

    An agent's most common call: before, the single `submit --wait` loaded the full client
    and the full wait, and took longer than `submit` and `wait` as two processes. Handled
    here is only what the full wait (`submit_flow.wait_and_show`) shows the same way: an
    end that `fastwait.simple_result` calls plain, a record that `fastread.record_text` can
    print, and, for the text form, a job that was not queued when asked (the full wait
    narrates a queued job's reason). Anything else goes on in the full wait, on a new
    connection, with nothing printed yet but the id (the job is queued by then, so there is
    no going back)."""
    from qex.cli.fastwait import (
        LIVE_WAIT_SECS,
        announce,
        left_of,
        live_budget,
        simple_result,
        stop_signals,
    )
    from qex.cli.wire import status_record

    wire = _open_wire()
    if wire is None:
        return None, None
    answer = wire.request(request)
    other = _unless_plain(wire, answer)
    if other is not None:
        return other
    assert isinstance(answer, dict)
    job_id = str(answer["id"])
    import time

    answered = time.monotonic()
    live = live_budget(wait_timeout)
    announce(job_id)
    _id_file(id_file, job_id)
    restore = stop_signals([job_id])
    record: dict[str, Any] | None = None
    try:
        # The text form narrates a queued job's reason: that is the full wait's to do.
        seen = None if quiet or as_json else status_record(
            wire.ask({"op": "status", "id": job_id}, LIVE_WAIT_SECS))
        left = answered + live - time.monotonic()
        if left > 0 and (quiet or as_json or (seen is not None
                                              and seen.get("state") != "queued")):
            record = status_record(wire.ask({"op": "wait", "id": job_id}, left))
    finally:
        wire.close()
    found = simple_result(record) if record is not None else None
    if found is not None and record is not None:
        text = None
        if not quiet:
            from qex.cli.fastread import record_text

            text = record_text(record, as_json=as_json, no_logs=False)
        if quiet or text is not None:
            restore()
            if text is not None:
                _show(text, None if as_json else job_id)
            return found[1]
    from qex.cli.common import get_paths
    from qex.cli.submit_flow import _record, wait_and_show
    from qex.core.states import Exit

    conn = _connect()
    if conn is None:
        return answer, None
    return wait_and_show(get_paths(Exit.QEX_FAILED), conn, _record(conn, job_id, {}),
                         timeout=left_of(wait_timeout, answered), quiet=quiet, as_json=as_json)


def _unless_plain(wire: Wire, answer: dict[str, Any] | Connection
                  ) -> tuple[dict[str, Any] | None, Connection | None] | None:
    """None when `answer` is a plain submission (an id, no warning), which the lean wait or
    follow goes on with on `wire`; otherwise the answer and the connection that `_finish`
    goes on with (the full client's, when the answer was slow: it holds the answer)."""
    if not isinstance(answer, dict):
        full = answer
        return _guarded(lambda: full.answer("submit_words")), full
    if (answer.get("result") != "submitted" or not isinstance(answer.get("id"), str)
            or answer.get("build_warnings") or answer.get("warning")):
        wire.close()
        return answer, _connect()
    return None


def _lean_submit_and_follow(request: dict[str, Any], id_file: str | None,
                            wait_timeout: float | None
                            ) -> int | tuple[dict[str, Any] | None, Connection | None]:
    """`qex run` and `submit --follow` through `qex.cli.wire`: the job's exit code, from
    `qex.cli.fastfollow` (which hands a job that is queued, runs long or ends with a sentence
    to the full attach itself); the submit's answer and a connection for `_finish` when the
    answer is not a plain submission; None and None when nothing was sent.

    The order is the full path's (`submit_flow.submit_one`): the stop signals held as the
    answer arrives, the id on stderr and in the id file, then `own_job` on the connection that
    waits, unless a dedupe key gave us another command's job (which a Ctrl-C then does not
    stop). A coordinator that answers `submit_words` knows `own_job`, so a refusal only
    means the job is not ours to stop when we vanish."""
    import time

    from qex.cli.fastfollow import follow_submitted, hold_stop_signals
    from qex.cli.fastwait import LIVE_WAIT_SECS, announce, left_of, live_budget
    from qex.cli.wire import status_record

    wire = _open_wire()
    if wire is None:
        return None, None
    answer = wire.request(request)
    held = hold_stop_signals()  # the attach releases them (`_finish`'s, or the hand-over's)
    other = _unless_plain(wire, answer)
    if other is not None:
        return other
    assert isinstance(answer, dict)
    job_id = str(answer["id"])
    answered = time.monotonic()
    announce(job_id)
    _id_file(id_file, job_id)
    mine = not answer.get("deduplicated")
    owned = mine and (wire.ask({"op": "own_job", "id": job_id}, LIVE_WAIT_SECS) or {}
                      ).get("result") == "ok"
    record = status_record(wire.ask({"op": "status", "id": job_id}, LIVE_WAIT_SECS))
    return follow_submitted(
        wire, job_id, record, held,
        seconds=max(0.0, live_budget(wait_timeout) - (time.monotonic() - answered)),
        timeout=left_of(wait_timeout, answered), stop_job=mine, owned=owned)


def _show(text: str, hint_for: str | None) -> None:
    """The final record, then (`hint_for`: the job's id, in the text form) the line on its
    output, as `submit_flow.wait_and_show` prints them."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    if hint_for is None:
        return
    from qex.cli.fastlogs import output_hint
    from qex.cli.wire import state_dir

    state = state_dir(os.environ)
    hint = None if state is None else output_hint(os.path.join(state, "jobs", hint_for), hint_for)
    if hint:
        sys.stderr.write(f"qex: {hint}\n")
        sys.stderr.flush()


def _open_wire() -> Wire | None:
    """`Wire.connect(start=True)`; when the start fails, a broken config file is why (the
    coordinator refuses to start on one), and the command says so with 121."""
    from qex.cli.wire import Wire
    from qex.client.errors import ClientError

    try:
        return Wire.connect(start=True)
    except ClientError:
        _check_config()
        raise


def _connect() -> Connection | None:
    """A connection through the full client; with nobody listening, the config is checked
    HERE and a coordinator started, in the click path's order (a broken config file is 121
    and starts nothing; the coordinator itself would refuse to start on it)."""
    from qex.cli.common import die, get_paths
    from qex.client.connection import connect
    from qex.core.config import ConfigError
    from qex.core.states import Exit
    from qex.store.config_file import load_config

    paths = get_paths(Exit.QEX_FAILED)
    try:
        conn = connect(paths, start=False)
        if conn is None:
            load_config(paths)  # its notes come back with the coordinator's answer
            conn = connect(paths, start=True)
    except ConfigError as exc:
        die(str(exc), Exit.QEX_FAILED)
    return conn


def _check_config() -> None:
    """End the command with 121 and the file's fault when the config file is broken."""
    from qex.cli.common import die, get_paths
    from qex.core.config import ConfigError
    from qex.core.states import Exit
    from qex.store.config_file import load_config

    try:
        load_config(get_paths(Exit.QEX_FAILED))
    except ConfigError as exc:
        die(str(exc), Exit.QEX_FAILED)


def _guarded(action: Any) -> dict[str, Any]:
    from qex.cli.jobcmd import guarded

    answer: dict[str, Any] = guarded(action)
    return answer


def _finish(params: dict[str, Any], answer: dict[str, Any], conn: Connection | None, *,
            wait: bool, follow: bool, quiet: bool, as_json: bool,
            wait_timeout: float | None) -> int:
    """Everything but the plainest submission: warnings, refusals, the id file, the wait or
    the follow."""
    from qex.cli.common import get_paths, print_warnings, warn
    from qex.core.states import Exit

    for note in answer.get("build_warnings") or ():
        warn(str(note))
    if answer.get("result") != "submitted" or not isinstance(answer.get("id"), str):
        refused_before_any(answer)
    job_id = str(answer["id"])
    print_warnings(answer)
    if not (wait or follow) or conn is None:
        _id_file(params["id_file"], job_id)
        if as_json:
            from qex.cli.common import print_json

            print_json({"id": job_id, "deduplicated": bool(answer.get("deduplicated"))})
        else:
            print(job_id, flush=True)
        return 0
    from qex.cli.fastwait import announce
    from qex.cli.submit_flow import _own, _record, wait_and_show

    paths = get_paths(Exit.QEX_FAILED)
    announce(job_id)
    _id_file(params["id_file"], job_id)
    if follow:
        from qex.cli.attaching import attach

        mine = not answer.get("deduplicated")
        owned = mine and _own(conn, job_id)  # before the record is fetched, as the click path
        attach(paths, conn, _record(conn, job_id, {}), timeout=wait_timeout, stop_job=mine,
               owned=owned)
    return wait_and_show(paths, conn, _record(conn, job_id, {}), timeout=wait_timeout,
                         quiet=quiet, as_json=as_json)


def _id_file(path_text: str | None, job_id: str) -> None:
    if not path_text:
        return
    from qex.cli.idfile import single_text, write_id_file

    write_id_file(path_text, single_text(job_id))
