"""The socket protocol shared by the CLI, the coordinator and the supervisor.

One JSON object per line over an AF_UNIX stream. Requests carry `op`, answers `result`.
Additive only: a field is never removed, renamed or retyped; unknown fields are ignored on
the wire; a change that cannot be additive takes a new op name and a capability.

Requests (op -> fields -> answer):
  ping                                   -> ok
  info                                   -> info {pid, version, started_at, ...}
  capabilities                           -> capabilities {names, version}
  submit       spec (JobSpec dict)       -> submitted {id, warning, deduplicated}
  submit_words options, environ, cwd     -> submitted (the coordinator builds the spec; with
               `options.each_line`, a fan-out: {group, group_name, jobs, summary, ...})
  submit_pipeline pipeline {path, source, text}, name, environ, cwd
                                         -> submitted {group, group_name, jobs, ...}
  own_job      id                        -> ok   (cancels its queued job when the link ends)
  rerun        id, environ, client_version -> submitted {id, from, build_warnings} (the
               coordinator submits the recorded spec again under a new id)
  list                                   -> jobs {jobs: [JobStatus dict]}
  status       id                        -> status {status}
  wait         id                        -> status {status} once the job is final
  kill         id, signal, grace_secs    -> ok
  cancel       id                        -> ok
  cancel_many  ids                       -> ok {answers: what `cancel` answers for each id,
               in order} (the records of a batch are written together)
  clean        id                        -> ok
  clean_many   ids                       -> ok {answers: what `clean` answers for each id,
               in order}
  events       since                     -> a stream of `event` answers
  pause        target, reason, until, by_pid, drain -> pause_state
  resume       target                    -> pause_state
  pause_state                            -> pause_state
  job_changed  id                        -> ok   (a supervisor wrote a record; read it now)
Errors: {"result": "error", "kind": no_such_job | wrong_state | internal | refused, "message"}.
"""

from __future__ import annotations

from qex import __version__

# `qex submit` builds its request here on every call: `typing` costs a third of the
# interpreter's start-up and `json` pulls in `re` and `enum`, so neither is imported at the
# top (the annotations are strings; `json` is imported where a line is encoded or decoded).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, Final, TypedDict

#: What this build can obey. The CLI refuses an option whose capability is missing.
CAPABILITIES: tuple[str, ...] = (
    "dedupe", "dependencies", "events", "groups", "history", "learn", "locks",
    "max-queue-time", "own-job", "pause", "politeness", "pools", "retries",
    "job-changed", "oom-retry", "enforce", "engine-slurm", "dependency-words", "job-file-text",
    "each-line-text", "each-line-parts", "cancel-many", "clean-many",
)
#: The capability of a coordinator whose `submit_words` takes `needs` and `after` as the
#: words a person typed, and resolves them itself (`qex.coordinator.submit_words`).
DEPENDENCY_WORDS = "dependency-words"
#: The capability of a coordinator whose `submit_words` takes the text of a `--job` file and
#: reads it itself (`qex.coordinator.submit_words`).
JOB_FILE_TEXT = "job-file-text"
#: The capability of a coordinator whose `submit_words` takes the text of an `--each-line`
#: input and submits the fan-out's jobs itself (`qex.coordinator.submit_lines`).
EACH_LINE_TEXT = "each-line-text"
#: The capability of a coordinator that takes such a text as one part of a longer input
#: (`each_line.part`: the fan-out's group, the number of the part's first job, the jobs in
#: all), so that a fan-out of any length goes in requests of at most
#: `fanout_source.PART_JOBS` jobs, all in one group.
EACH_LINE_PARTS = "each-line-parts"

#: A coordinator below this version cannot say what it can do, so the CLI refuses it.
CAPABILITY_FLOOR = "0.6.0"

#: Error kinds.
NO_SUCH_JOB = "no_such_job"
WRONG_STATE = "wrong_state"
INTERNAL = "internal"
REFUSED = "refused"
ERROR_KINDS = (NO_SUCH_JOB, WRONG_STATE, INTERNAL, REFUSED)


class Op:
    """The request names. Plain string constants, not an enum: the hot read paths import
    this module, and a class body of strings costs nothing to build."""

    PING: Final = "ping"
    INFO: Final = "info"
    CAPABILITIES: Final = "capabilities"
    SUBMIT: Final = "submit"
    SUBMIT_WORDS: Final = "submit_words"
    SUBMIT_PIPELINE: Final = "submit_pipeline"
    OWN_JOB: Final = "own_job"
    RERUN: Final = "rerun"
    LIST: Final = "list"
    #: `list` as the document `qex list --json` prints, sent after the answer line.
    LIST_JSON: Final = "list_json"
    #: The rows of the `qex list` table, made by the coordinator, sent after the answer line.
    LIST_TABLE: Final = "list_table"
    STATUS: Final = "status"
    WAIT: Final = "wait"
    KILL: Final = "kill"
    CANCEL: Final = "cancel"
    #: Several cancels in one request, answered together (`cancel_many`).
    CANCEL_MANY: Final = "cancel_many"
    CLEAN: Final = "clean"
    #: Several cleans in one request, answered together (`clean_many`).
    CLEAN_MANY: Final = "clean_many"
    EVENTS: Final = "events"
    PAUSE: Final = "pause"
    RESUME: Final = "resume"
    PAUSE_STATE: Final = "pause_state"
    JOB_CHANGED: Final = "job_changed"
    COMPLETE: Final = "complete"


class Result:
    """The answer names (`result` of an answer line)."""

    OK: Final = "ok"
    INFO: Final = "info"
    CAPABILITIES: Final = "capabilities"
    SUBMITTED: Final = "submitted"
    JOBS: Final = "jobs"
    #: `list_json`'s answer: `size` bytes of JSON text follow the line (see `list_json`).
    JOBS_JSON: Final = "jobs_json"
    #: `list_table`'s answer: `size` bytes of JSON text follow the line (see `list_table`).
    JOBS_TABLE: Final = "jobs_table"
    STATUS: Final = "status"
    PAUSE_STATE: Final = "pause_state"
    EVENT: Final = "event"
    ERROR: Final = "error"
    #: `complete`'s answer: `jobs`, the (id, safe name) pairs a Tab press may offer.
    CANDIDATES: Final = "candidates"


#: Each request and the answer it gets when it succeeds (`events` answers with a stream).
ANSWERS: dict[str, str] = {
    Op.PING: Result.OK,
    Op.INFO: Result.INFO,
    Op.CAPABILITIES: Result.CAPABILITIES,
    Op.SUBMIT: Result.SUBMITTED,
    Op.SUBMIT_WORDS: Result.SUBMITTED,
    Op.SUBMIT_PIPELINE: Result.SUBMITTED,
    Op.OWN_JOB: Result.OK,
    Op.RERUN: Result.SUBMITTED,
    Op.LIST: Result.JOBS,
    Op.LIST_JSON: Result.JOBS_JSON,
    Op.LIST_TABLE: Result.JOBS_TABLE,
    Op.STATUS: Result.STATUS,
    Op.WAIT: Result.STATUS,
    Op.KILL: Result.OK,
    Op.CANCEL: Result.OK,
    Op.CANCEL_MANY: Result.OK,
    Op.CLEAN: Result.OK,
    Op.CLEAN_MANY: Result.OK,
    Op.EVENTS: Result.EVENT,
    Op.PAUSE: Result.PAUSE_STATE,
    Op.RESUME: Result.PAUSE_STATE,
    Op.PAUSE_STATE: Result.PAUSE_STATE,
    Op.JOB_CHANGED: Result.OK,
    Op.COMPLETE: Result.CANDIDATES,
}

if TYPE_CHECKING:
    class Submitted(TypedDict):
        """The `submitted` answer, checked: the job's id, the coordinator's warning (or
        None), and whether an earlier job with the same dedupe key was handed back."""

        id: str
        warning: str | None
        deduplicated: bool
else:
    Submitted = dict  # the same value at run time, without building a TypedDict class


def submitted(answer: dict[str, Any]) -> Submitted | None:
    """The typed `submitted` answer; None when the answer does not have the job's id."""
    job_id = answer.get("id")
    if not isinstance(job_id, str) or not job_id:
        return None
    warning = answer.get("warning")
    return Submitted(id=job_id, warning=warning if isinstance(warning, str) else None,
                     deduplicated=bool(answer.get("deduplicated")))


#: Every request name, in the order of the table above.
OPS: tuple[str, ...] = tuple(ANSWERS)


# -- the requests, one builder each: the only place a request line is spelled out ------------

def ping() -> dict[str, Any]:
    return {"op": Op.PING}


def info() -> dict[str, Any]:
    return {"op": Op.INFO}


def capabilities() -> dict[str, Any]:
    return {"op": Op.CAPABILITIES}


def submit(spec: dict[str, Any]) -> dict[str, Any]:
    return {"op": Op.SUBMIT, "spec": spec}


def submit_words(options: dict[str, Any], *, environ: dict[str, str], cwd: str,
                 client_version: str) -> dict[str, Any]:
    """A submit that the coordinator builds from the options as given (the fast path)."""
    return {"op": Op.SUBMIT_WORDS, "options": options, "environ": environ, "cwd": cwd,
            "client_version": client_version}


def submit_pipeline(pipeline: dict[str, str], *, name: str | None, environ: dict[str, str],
                    cwd: str, client_version: str) -> dict[str, Any]:
    """A pipeline file's text (`{"path", "source", "text"}`, as `submit_words` carries a job
    file) that the coordinator builds and submits, every stage (the fast path)."""
    return {"op": Op.SUBMIT_PIPELINE, "pipeline": pipeline, "name": name, "environ": environ,
            "cwd": cwd, "client_version": client_version}


def rerun(job_id: str, *, environ: dict[str, str], client_version: str) -> dict[str, Any]:
    """Submit the job `job_id` again from its recorded spec, the config read as the command
    would read it with `environ` (the fast path; an older coordinator refuses the request as
    unknown, and the command then submits the spec itself)."""
    return {"op": Op.RERUN, "id": job_id, "environ": environ, "client_version": client_version}


def complete(kind: str, prefix: str) -> dict[str, Any]:
    """The jobs a Tab press may offer (`qex.core.job_candidates`): their (id, safe name)
    pairs, newest first, of the jobs of `kind` whose id or name starts with `prefix`, at
    most `MAX_ITEMS` of them. A coordinator older than this request refuses it as unknown,
    and the command reads the records from disk instead."""
    return {"op": Op.COMPLETE, "kind": kind, "prefix": prefix}


def own_job(job_id: str) -> dict[str, Any]:
    return {"op": Op.OWN_JOB, "id": job_id}


def list_jobs(word: str | None = None, states: Iterable[str] | None = None) -> dict[str, Any]:
    """Every record; with `word`, only those it may name (`qex.core.job_words.may_name`);
    with `states`, only those in one of them and the active ones
    (`qex.core.state_words.listed_for`). A coordinator that does not know a field ignores
    it and sends every record, so the command filters the answer itself either way."""
    message: dict[str, Any] = {"op": Op.LIST}
    if word is not None:
        message["word"] = word
    if states is not None:
        message["states"] = sorted(states)
    return message


def list_json(states: Iterable[str] = (), tags: Iterable[str] = (), group: str | None = None,
              cwd: str | None = None, under: str | None = None) -> dict[str, Any]:
    """Every record as `qex list --json` prints it, made by the coordinator; with filters,
    the records of the jobs they keep, chosen as for `list_table`.

    The answer line `{"result": "jobs_json", "size": N, "pauses": {...}}` (with `damaged`
    as `list` has it, `pauses` as for `list_table`, and `"filtered": true` when the filters
    chose the jobs) is followed by exactly N bytes, the ASCII text of the JSON document, so
    that a listing of thousands of jobs is neither encoded into a line nor parsed back by
    the client. A coordinator older than this request refuses it as unknown. One that knows
    the request but not its filters (or its `pauses`) leaves those out of its answer and
    sends every record: the command then filters them itself (and asks for the pauses).
    """
    return _with_filters(Op.LIST_JSON, states=states, tags=tags, group=group, cwd=cwd, under=under)


def list_table(states: Iterable[str] = (), tags: Iterable[str] = (), group: str | None = None,
               cwd: str | None = None, under: str | None = None) -> dict[str, Any]:
    """The `qex list` table's rows, made by the coordinator, with what the command prints
    around them, in one answer; with filters, the rows of the jobs they keep, chosen by
    `qex.core.job_filters.chosen_jobs` (`cwd` and `under` resolved by the command). A group
    word that names several groups adds `groups` (their ids) and `group` to the answer; one
    that names none is refused with `no_such_job` (by `list_json` too).

    The answer line `{"result": "jobs_table", "size": N, "pools": [...], "pauses": {...}}`
    (with `damaged` as `list` has it; `pauses` as the `pause_state` answer has its `queue`
    and `locks`) is followed by exactly N bytes: a JSON array with one array of the seven
    cells of `qex.core.record_view.row_cells` per job, in submission order. The command lays
    them out for its terminal; it never receives or parses the records, which at thousands
    of jobs cost more than all else. A coordinator older than this request refuses it as
    unknown, and the command then asks for `list_json`.
    """
    return _with_filters(Op.LIST_TABLE, states=states, tags=tags, group=group, cwd=cwd,
                         under=under)


def _with_filters(op: str, *, states: Iterable[str], tags: Iterable[str], group: str | None,
                  cwd: str | None, under: str | None) -> dict[str, Any]:
    """A listing request with the filters that are set (none: every job)."""
    message: dict[str, Any] = {"op": op}
    for key, value in (("states", sorted(states)), ("tags", list(tags)), ("group", group),
                       ("cwd", cwd), ("under", under)):
        if value:
            message[key] = value
    return message


def status(job_id: str) -> dict[str, Any]:
    return {"op": Op.STATUS, "id": job_id}


def wait(job_id: str) -> dict[str, Any]:
    return {"op": Op.WAIT, "id": job_id}


def kill(job_id: str, signal: int, grace_secs: float | None) -> dict[str, Any]:
    return {"op": Op.KILL, "id": job_id, "signal": signal, "grace_secs": grace_secs}


def cancel(job_id: str) -> dict[str, Any]:
    return {"op": Op.CANCEL, "id": job_id}


def cancel_many(job_ids: Iterable[str]) -> dict[str, Any]:
    """Cancels of several jobs in one request. A coordinator older than it answers
    `unknown_request`, and the command sends a `cancel` per job instead."""
    return {"op": Op.CANCEL_MANY, "ids": list(job_ids)}


def each_answer(answer: dict[str, Any], count: int) -> list[dict[str, Any]] | None:
    """The answers to the `count` requests that a `cancel_many` or `clean_many` carried, in
    order; None when the answer does not hold them (a coordinator of a different qex)."""
    answers = answer.get("answers")
    if not isinstance(answers, list) or len(answers) != count or not all(
            isinstance(one, dict) and one.get("result") in (Result.OK, Result.ERROR)
            for one in answers):
        return None
    return answers


def clean(job_id: str) -> dict[str, Any]:
    return {"op": Op.CLEAN, "id": job_id}


def clean_many(job_ids: Iterable[str]) -> dict[str, Any]:
    """The deletions of several jobs' records in one request. A coordinator older than it
    answers `unknown_request`, and the command sends a `clean` per job instead."""
    return {"op": Op.CLEAN_MANY, "ids": list(job_ids)}


def events(since: str | None) -> dict[str, Any]:
    return {"op": Op.EVENTS, "since": since}


def pause(target: dict[str, Any] | str | None, *, reason: str | None, until: float | None,
          by_pid: int | None, drain: bool) -> dict[str, Any]:
    return {"op": Op.PAUSE, "target": target, "reason": reason, "until": until,
            "by_pid": by_pid, "drain": drain}


def resume(target: dict[str, Any] | str | None) -> dict[str, Any]:
    return {"op": Op.RESUME, "target": target}


def pause_state() -> dict[str, Any]:
    return {"op": Op.PAUSE_STATE}


def job_changed(job_id: str, *, pending: dict[str, Any] | None = None,
                note: str | None = None) -> dict[str, Any]:
    """`pending` and `note`: a record that the disk refused, and the sentence that says so."""
    message: dict[str, Any] = {"op": Op.JOB_CHANGED, "id": job_id}
    if pending is not None:
        message["pending"] = pending
        message["note"] = note
    return message


MAX_LINE = 64 * 1024 * 1024


class ProtocolError(RuntimeError):
    """A line that is not one JSON object."""


def encode(message: dict[str, Any]) -> bytes:
    import json

    return json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    import json

    try:
        value = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"the line is not JSON: {exc}") from None
    except RecursionError:
        raise ProtocolError("the line nests its values deeper than qex reads") from None
    if not isinstance(value, dict):
        raise ProtocolError("the line is not a JSON object")
    return value


# -- the answers ------------------------------------------------------------------------------

def error(kind: str, message: str) -> dict[str, Any]:
    return {"result": Result.ERROR, "kind": kind, "message": message}


#: How every coordinator since the fast paths words its answer to an op it does not know;
#: a command that meets it does the work the older way (`unknown_request`).
UNKNOWN_REQUEST = "this coordinator does not know the request"


def unknown(op: object) -> dict[str, Any]:
    """The answer to a request whose op this coordinator does not know."""
    return error(INTERNAL, f"{UNKNOWN_REQUEST} `{op}`; it may be older than the command that "
                           "sent it")


def unknown_request(answer: dict[str, Any]) -> bool:
    """True when `answer` says that the coordinator does not know the request (it is older
    than the command), so nothing was done."""
    message = answer.get("message")
    return (answer.get("result") == Result.ERROR and isinstance(message, str)
            and message.startswith(UNKNOWN_REQUEST))


def ok(**fields: Any) -> dict[str, Any]:
    return {"result": Result.OK, **fields}


def answer(result: str, **fields: Any) -> dict[str, Any]:
    """An answer named `result` (one of `Result`) with its fields."""
    return {"result": result, **fields}


def error_of(message: dict[str, Any]) -> tuple[str, str] | None:
    """(kind, message) when `message` is an `error` answer, else None."""
    if message.get("result") != Result.ERROR:
        return None
    kind = message.get("kind")
    text = message.get("message")
    return (kind if isinstance(kind, str) and kind else INTERNAL,
            text if isinstance(text, str) and text else "the coordinator gave no reason")


def version_tuple(version: str) -> tuple[int, int, int]:
    """Leading digits of each dotted part; missing parts are 0 (`0.0.0-dev+g1` -> (0, 0, 0))."""
    parts: list[int] = []
    for piece in version.split("+", 1)[0].split(".")[:3]:
        digits = ""
        for char in piece:
            if not char.isdigit():
                break
            digits += char
        parts.append(int(digits) if digits else 0)
    while len(parts) < 3:
        parts.append(0)
    return parts[0], parts[1], parts[2]


def is_development(version: str) -> bool:
    return version == "0.0.0-dev" or version.startswith("0.0.0-dev+")


def below_floor(version: str) -> bool:
    return version_tuple(version) < version_tuple(CAPABILITY_FLOOR)


VERSION = __version__
