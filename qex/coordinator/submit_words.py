"""The `submit_words` request: build the job's spec HERE from the command's options.

`qex submit` used to build the spec itself: read the config, measure the machine, look up
the learner, import the spec code, then send the spec. The coordinator has all of that at
hand, warm, so the fast path (`qex.cli.fast`) sends only what belongs to the calling shell
(its options, its environment, its directory, its version) and this handler builds the spec
with the same code (`qex.core.jobspec.build_spec`) and the same inputs: the config file is
read again for each request (the command's config paths, a cached parse while the bytes
stay the same), so a submission sees the file as it is now, as before, and a broken file
refuses the job with the same sentence.

`needs` and `after`, when present, are the words of `--needs`/`--after` as typed (ids, starts
of ids, names, groups; comma lists), resolved here over the coordinator's own records with
the resolver's rules (`qex.core.word_match.dependency_ids`): the command no longer fetches
every record to do it. A coordinator with this ability says so (`protocol.DEPENDENCY_WORDS`);
an older one refuses the unknown fields, so the command asks first. So does `job_file`:
the text of a `--job` file as the command read it (`{"path": as typed, "source": absolute,
"text": ...}`), parsed here with the command's own readers (`parse_structured`,
`parse_job_file`), its own `needs`/`after` resolved with the command line's
(`protocol.JOB_FILE_TEXT`). With `each_line` (the text of an `--each-line` input), the
request is a whole fan-out, which `qex.coordinator.submit_lines` expands with `build_words`
(`protocol.EACH_LINE_TEXT`).

The spec then goes through the ordinary `submit` handler, unchanged. Errors that the command
used to print itself carry `"build": true`, so it prints them as it did (121; 127, with
`"not_found": true`, for a dependency that names no job or more than one).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from typing import Any

from qex.coordinator.state import Coordinator, in_submission_order
from qex.coordinator.submit import NewJobs, SubmissionWakes, handle_submit
from qex.core import protocol

#: The options a `submit_words` request may carry (the fields of `SubmitOptions`).
OPTION_FIELDS = frozenset({
    "command", "cpu", "mem", "gpu", "vram", "claims", "name", "cwd", "env", "env_capture",
    "no_env_capture", "tags", "priority", "timeout", "max_queue_time", "retries", "locks",
    "nice", "no_limit_env_hints", "dedupe_key", "dedupe_window", "engine",
})
#: The fields that carry dependency words, and the option each came from (for the messages).
DEPENDENCY_FIELDS = {"needs": "--needs", "after": "--after"}
#: The field that carries a `--job` file's text.
JOB_FILE_FIELD = "job_file"
#: The field that carries the input of `--each-line` (`qex.coordinator.submit_lines`).
EACH_LINE_FIELD = "each_line"

def build_refusal(message: str) -> dict[str, Any]:
    """A refusal that the command prints as it printed its own (`"build": true`: 121)."""
    answer = protocol.error(protocol.REFUSED, message)
    answer["build"] = True
    return answer


def _config(config_path: Any) -> Any:
    """The config in force for this path, parsed again only when its bytes changed (the
    coordinator's own read at its start counts: `parsed_config`)."""
    from qex.store.config_file import look_at, parsed_config

    return parsed_config(look_at(config_path), config_path)


def _learned(paths: Any, config: Any, machine: Any, cwd: str,
             argv: list[str]) -> tuple[int | None, int | None] | None:
    from qex.core.learner import learn_key, suggest
    from qex.store.usage import lookup

    try:
        entry = lookup(paths, learn_key(cwd, argv))
    except OSError:
        return None
    found = suggest(entry, config.learn.margin, config.retry.growth, config.mem_budget(machine))
    return (found[0], found[1]) if found is not None else None


def _options_ok(options: object) -> bool:
    known = OPTION_FIELDS | set(DEPENDENCY_FIELDS) | {JOB_FILE_FIELD, EACH_LINE_FIELD}
    if not isinstance(options, dict) or not set(options) <= known:
        return False
    each_line = options.get(EACH_LINE_FIELD, {"path": "-", "text": "", "max_jobs": 1})
    if not (isinstance(each_line, dict)
            and set(each_line) - {"part"} == {"path", "text", "max_jobs"}
            and isinstance(each_line["path"], str) and isinstance(each_line["text"], str)
            and type(each_line["max_jobs"]) is int and each_line["max_jobs"] >= 1
            and ("part" not in each_line or _part_ok(each_line["part"]))):
        return False
    job_file = options.get(JOB_FILE_FIELD, {"path": "", "source": "", "text": ""})
    if not (isinstance(job_file, dict) and set(job_file) == {"path", "source", "text"}
            and all(isinstance(v, str) for v in job_file.values())):
        return False
    return all(isinstance(words, list) and all(isinstance(w, str) for w in words)
               for words in (options.get(key, []) for key in DEPENDENCY_FIELDS))


def _part_ok(part: object) -> bool:
    """`each_line.part` (`protocol.EACH_LINE_PARTS`): the fan-out's group id (the command
    makes it, so that it can name the group before the first answer), the number of the
    part's first job (from 1) and the jobs of the whole input."""
    from qex.core.names import is_uuid

    if not (isinstance(part, dict) and set(part) == {"group", "first", "total"}):
        return False
    group, first, total = part["group"], part["first"], part["total"]
    return (isinstance(group, str) and len(group) == 36 and is_uuid(group)
            and type(first) is int and type(total) is int and 1 <= first <= total)


def _job_file(sent: dict[str, str]) -> Any:
    """The `JobFile` of the text a command sent, read as the command reads a file it opened
    (`submitting.read_job_file`); raises the readers' errors, whose sentences name the path
    as the person typed it."""
    from pathlib import Path

    from qex.core.jobfile import parse_job_file
    from qex.store.structured import parse_structured

    return parse_job_file(parse_structured(sent["text"].encode(), Path(sent["path"])),
                          sent["source"])


def _dependencies(coord: Coordinator, paths: Any, options: dict[str, Any], now: float,
                  job_file: Any = None) -> tuple[dict[str, list[str]], dict[str, Any] | None]:
    """The ids that the `needs` and `after` words name (`{"needs": [...], "after": [...]}`)
    and None, or nothing and the refusal to answer. Only the records a word may name are
    looked at (`JobTable.named_by`, as `list` with a word sends them), and the history file
    (every id ever accepted) is read only for a word that names nothing, as the command's
    own look-up does: a deleted job's id is then told apart from a typo. A job file's own
    words come first, as the command puts them."""
    from qex.core.word_match import ResolveError, dependency_ids

    resolved: dict[str, list[str]] = {}
    for key, option in DEPENDENCY_FIELDS.items():
        from_file = list(getattr(job_file, key)) if job_file is not None else []
        words = [w for w in [*from_file, *(options.get(key) or ())] if w.strip()]
        parts = [p.strip() for w in words for p in w.split(",") if p.strip()]
        if not parts:
            resolved[key] = []  # the usual submission: no walk over every job it knows
            continue
        # The few records a word may name (`JobTable.named_by`), in submission order.
        chosen = {job.id: job for part in parts for job in coord.jobs.named_by(part)}
        records = [job.record.to_dict() for job in in_submission_order(chosen.values())]
        try:
            try:
                resolved[key] = dependency_ids(records, words, option=option)
            except ResolveError as exc:
                if not exc.not_found:
                    raise
                from qex.store.history import read_all

                history = {k.lower(): v for k, v in read_all(paths).items()}
                resolved[key] = dependency_ids(records, words, option=option, history=history,
                                               now=now)
        except ResolveError as exc:
            answer = build_refusal(exc.message)
            if exc.not_found:
                answer["not_found"] = True
            return {}, answer
    return resolved, None


def request_ok(message: dict[str, Any]) -> bool:
    """The request has the shape that `submit_words` takes (`protocol.submit_words`)."""
    options, environ = message.get("options"), message.get("environ")
    return (_options_ok(options) and isinstance(environ, dict)
            and isinstance(message.get("cwd"), str)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in environ.items()))


def malformed() -> dict[str, Any]:
    return protocol.error(protocol.INTERNAL,
                          "qex could not read this job: the request's options are malformed")


def handle_submit_words(coord: Coordinator, message: dict[str, Any]) -> dict[str, Any]:
    if not request_ok(message) or EACH_LINE_FIELD in message["options"]:
        return malformed()  # a fan-out is `submit_lines`'s, which the server calls
    built = build_words(coord, message)
    if isinstance(built, dict):
        return built
    spec, warnings = built
    answer = handle_submit(coord, {"op": "submit", "spec": spec.to_dict()})
    answer["build_warnings"] = warnings
    return answer


def command_config(environ: dict[str, str]) -> tuple[Any, Any] | dict[str, Any]:
    """The paths and the config that a command with `environ` would read, or the refusal it
    would print (a bad state dir or config file)."""
    from qex.core.config import ConfigError
    from qex.store.paths import PathError, Paths

    try:
        paths = Paths.from_env(environ)
        return paths, _config(paths.config_file)
    except (PathError, ConfigError) as exc:
        return build_refusal(str(exc))


def config_notes(config: Any) -> list[str]:
    """The config's notes, which the command prints before anything else."""
    return list(getattr(config, "notes", ()))


class BuildContext:
    """What every spec of one request is built with: the command's paths, its config as the
    file is now, its environment and directory, the machine, and the request's clock."""

    def __init__(self, paths: Any, config: Any, environ: dict[str, str], cwd: str,
                 now: float) -> None:
        from qex.platform.machine import machine

        self.paths, self.config, self.environ, self.cwd, self.now = (
            paths, config, environ, cwd, now)
        self.machine = machine()

    @classmethod
    def of(cls, message: dict[str, Any]) -> BuildContext | dict[str, Any]:
        """The context of a checked request, or the refusal (a bad state dir or config)."""
        found = command_config(message["environ"])
        if isinstance(found, dict):
            return found
        paths, config = found
        return cls(paths, config, message["environ"], message["cwd"], time.time())

    @property
    def notes(self) -> list[str]:
        return config_notes(self.config)

    def build(self, opts: Any, job_file: Any, *, job_id: str,
              learn_key: list[str] | None = None) -> tuple[Any, list[str]] | dict[str, Any]:
        """One spec and its warnings, with the learner's claim when half of the claim was not
        given (`submitting.Submitter.build`), or the refusal."""
        from qex.core.jobspec import SpecError, build_spec

        def built(learned: tuple[int | None, int | None] | None) -> tuple[Any, list[str]]:
            return build_spec(opts, job_file, config=self.config, machine=self.machine,
                              environ=self.environ, shell_cwd=self.cwd, learned=learned,
                              job_id=job_id, now=self.now, learn_key=learn_key,
                              config_path=str(self.paths.config_file))

        try:
            spec, warnings = built(None)
            if not spec.explicit_claim and self.config.learn.enabled:
                learned = _learned(self.paths, self.config, self.machine, spec.cwd,
                                   learn_key or spec.command)
                if learned is not None:
                    spec, warnings = built(learned)
        except SpecError as exc:
            return build_refusal(str(exc))
        return spec, warnings


def version_note(coord: Coordinator, message: dict[str, Any]) -> str | None:
    """The note on a command of another version than this coordinator, which the command
    prints after the spec's warnings."""
    from qex.coordinator.queries import program_replaced
    from qex.core.coordinator_notes import version_warning

    info = {"pid": os.getpid(), "version": protocol.VERSION,
            "program_replaced": program_replaced(coord)}
    return version_warning(info, str(message.get("client_version") or "")) or None


def build_words(coord: Coordinator, message: dict[str, Any], *,
                fanout: dict[str, Any] | None = None) -> tuple[Any, list[str]] | dict[str, Any]:
    """The spec of a checked request (`request_ok`) and the warnings the command prints
    before its id, or the refusal to answer. `fanout` (a fan-out's first job) sets the
    options that the command's fan-out sets: `command`, `group`, `group_name`, and the
    template that the learner keys the claim by (`learn_key`)."""
    from qex.core.jobspec import SubmitOptions
    from qex.core.names import new_id

    options = dict(message["options"])
    options.pop(EACH_LINE_FIELD, None)
    sent_file = options.pop(JOB_FILE_FIELD, None)
    job_file = None
    if sent_file is not None:
        from qex.core.jobfile import JobFileError
        from qex.store.structured import StructuredError

        try:
            job_file = _job_file(sent_file)
        except (StructuredError, JobFileError) as exc:
            return build_refusal(str(exc))
    ctx = BuildContext.of(message)
    if isinstance(ctx, dict):
        return ctx
    dependencies, refused = _dependencies(coord, ctx.paths, options, ctx.now, job_file)
    if refused is not None:
        return refused
    opts = SubmitOptions(**{**options, **dependencies})
    learn_key = None
    if fanout is not None:
        opts.command = fanout["command"]
        opts.group = fanout["group"]
        opts.group_name = fanout["group_name"]
        learn_key = fanout["learn_key"]
    built = ctx.build(opts, job_file, job_id=new_id(), learn_key=learn_key)
    if isinstance(built, dict):
        return built
    spec, warnings = built
    # The command printed the config's notes first, then the spec's warnings (in order).
    note = version_note(coord, message)
    return spec, [*ctx.notes, *warnings, *([note] if note else [])]


#: A group's jobs written between two yields to the event loop, whose records are synced
#: together (`NewJobs`): about 6 ms of the loop's time for a batch, where each job alone
#: held it about 1.3 ms and the syncs of each job waited for one another.
JOBS_PER_BATCH = 8


async def submit_each(coord: Coordinator, named: Iterable[tuple[str, Any]],
                      told: dict[str, Any]) -> dict[str, Any]:
    """Submit a group's jobs (`(name, spec)` in order), yielding to the event loop after
    each `JOBS_PER_BATCH`, so that a long group does not hold up the other connections or
    the supervisors' notes. The jobs between two yields are one batch (`NewJobs`), made
    durable before the yield. The answer carries `told` and the jobs queued (`jobs`); a job
    that the submit refuses ends the group, and the answer is that refusal, with its name
    (`stage`). The scheduler is woken as `SubmissionWakes` says, and at the end for
    whatever is due."""
    import asyncio

    jobs: list[dict[str, Any]] = []
    wakes = SubmissionWakes(coord)
    batch = NewJobs(coord)

    def commit() -> dict[str, Any] | None:
        """None, or the answer for a batch that the disk refused: its first job named, and
        only the jobs that stay queued listed."""
        held = {job.id for job, _staged in batch.pending}
        refused = batch.commit()
        if refused is None:
            return None
        stage = next(entry["name"] for entry in jobs if entry["id"] in held)
        kept = [entry for entry in jobs if entry["id"] not in held]
        return {**refused, **told, "stage": stage, "jobs": kept}

    try:
        for index, (name, spec) in enumerate(named):
            if index and not index % JOBS_PER_BATCH:
                refused = commit()
                if refused is not None:
                    return refused
                await asyncio.sleep(0)
            answer = handle_submit(coord, {"op": "submit", "spec": spec.to_dict()},
                                   wakes=wakes, batch=batch)
            if answer.get("result") != protocol.Result.SUBMITTED:
                return commit() or {**answer, **told, "stage": name, "jobs": jobs}
            jobs.append({"name": name, "id": answer["id"], "warning": answer.get("warning")})
        return commit() or {"result": protocol.Result.SUBMITTED, **told, "jobs": jobs}
    finally:
        batch.commit()  # after a fault: nothing staged is left for the loop to see
        wakes.finish()
