"""The hot commands without click: `submit`, `run`, `wait`, `status`, `list`, `logs`, `kill`,
`cancel`, `clean`, `info`, `pipeline`, `rerun`, `events`, the pauses (`pause`, `resume` and
their `queue` and `lock`), `version` and `--version`, `help`, `completion`, and the rarer
`watchers`, `config show`, `config path`, `du`, `gc`, `coordinator stop`, `coordinator
restart` and `schema` (and `daemon`, so that a coordinator never loads click).

A person's shell loop or an agent runs these one process per call, so each call pays for
Python's start-up and its imports; click and the option framework alone cost more than the
interpreter. Here the arguments are parsed by `qex.cli.fastargs` from a table GENERATED from
the click commands (`qex.cli.fastgen`), and each command calls the same click-free body
as its click command (`status_core`, `list_core`, `wait_core`, `logs_core`, `stop_core`).

Whatever this module does not handle goes to click, unchanged: any form the parser does not
fully understand, any mistake that needs click's usage message, `--help`, and every error
check of a command's options (the handlers give up before acting when a check would fail).
A handler returns None ONLY before it has changed anything, so click can start over.

`qex submit` sends its options, environment and directory to the coordinator, which builds
the spec with its warm config (`qex.coordinator.submit_words`); when no coordinator
listens, or an older one does not know that request, the click path submits as before.
`qex run` and the `--follow` forms copy a short job's output through `qex.cli.fastfollow`.
`QEX_NO_FAST_PATH=1` turns this module off (the tests compare both paths).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # `typing` alone costs a third of the interpreter's start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from qex.cli.wire import Wire

#: submit's click parameter names -> `SubmitOptions` field names, where they differ.
SPEC_RENAME = {"claim": "claims", "tag": "tags", "lock": "locks", "command_args": "command"}
#: submit's parameters that are not part of the job.
SUBMIT_ONLY = frozenset({"wait", "follow", "quiet", "wait_timeout", "as_json", "each_line",
                         "max_jobs", "id_file", "job", "needs", "after"})
#: The log-selection parameters of `status` and `logs`.
SELECTION = ("tail", "head", "lines", "grep", "fixed", "context", "number", "max_matches",
             "all_lines")


def answer(args: list[str]) -> int | None:
    """The exit code when a fast form handled `args`; None to use the click application."""
    if not args or os.environ.get("QEX_NO_FAST_PATH") == "1":
        return None
    if args == ["--version"]:
        from qex.cli.version_core import version_flag

        return version_flag()
    command, rest = args[0], args[1:]
    if rest and f"{command} {rest[0]}" in HANDLERS:  # a group's subcommand: `pause queue`
        command, rest = f"{command} {rest[0]}", rest[1:]
    handler = HANDLERS.get(command)
    if handler is None:
        return None
    from qex.cli.fastargs import parse

    params = parse(command, rest)
    if params is None:
        return None
    try:
        return handler(params)
    except (KeyboardInterrupt, EOFError):
        sys.stderr.write("\n")
        from qex.cli.exits import interrupted

        return interrupted(args[0])
    except BrokenPipeError:
        from qex.cli.main import reader_left

        reader_left()
        return 0


def spec_options(params: dict[str, Any]) -> dict[str, Any]:
    """The `SubmitOptions` fields for parsed submit parameters (lists, not tuples)."""
    fields: dict[str, Any] = {}
    for key, value in params.items():
        if key in SUBMIT_ONLY:
            continue
        fields[SPEC_RENAME.get(key, key)] = list(value) if isinstance(value, tuple) else value
    return fields


def selection(params: dict[str, Any]) -> Any:
    """The log Selection for parsed parameters, or None when click must report a mistake."""
    from qex.core.logsel import Selection, SelectionError, parse_range

    try:
        lines = parse_range(params["lines"]) if params.get("lines") else None
        return Selection(
            tail=params.get("tail"), head=params.get("head"), lines=lines,
            grep=params.get("grep"), fixed=bool(params.get("fixed")),
            context=int(params.get("context") or 0), number=bool(params.get("number")),
            max_matches=params.get("max_matches"), all=bool(params.get("all_lines")),
        )
    except SelectionError:
        return None


def _duration(text: str | None) -> tuple[bool, float | None]:
    """(ok, seconds or None for no limit) for a duration option; not ok when click must word
    the mistake."""
    if text is None:
        return True, None
    from qex.core.duration_text import seconds

    try:
        return True, seconds(text.strip())
    except ValueError:
        return False, None


# -- the commands ---------------------------------------------------------------------------

def _defaults(command: str, p: dict[str, Any], names: tuple[str, ...]) -> bool:
    """True when each of `names` has its default value (the option was not given)."""
    from qex.cli.fast_table import TABLE

    defaults = TABLE[command]["defaults"]
    return all(p[name] == defaults[name] for name in names)


#: The status options that `qex.cli.fastread.status` leaves to the full body.
_STATUS_FULL_ONLY = ("quiet", "follow", "show_env", "timeout_text")


def _streams(p: dict[str, Any], both: tuple[str, ...]) -> tuple[str, ...]:
    """The streams that `--stdout` or `--stderr` chose (not both: click words that)."""
    return ("stdout",) if p["only_stdout"] else ("stderr",) if p["only_stderr"] else both


#: The status options that `qex.cli.fastfollow.follow_status` leaves to the full body: the
#: log selection and the printing options do nothing with --follow, so click's checks of them
#: are kept.
_STATUS_FOLLOW_FULL_ONLY = ("show_env", "no_logs", "tail", "head", "all_lines", "only_stdout",
                            "only_stderr", "lines", "grep", "fixed", "context", "number",
                            "max_matches")


def _status(p: dict[str, Any]) -> int | None:
    plain = _defaults("status", p, SELECTION)  # `status ID` needs no selection module
    sel = None if plain else selection(p)
    both = p["only_stdout"] and p["only_stderr"]
    if (plain or sel is not None) and not both and _defaults("status", p, _STATUS_FULL_ONLY):
        from qex.cli.fastread import status
        from qex.core.log_words import STATUS_STREAMS

        code = status(p["word"], as_json=p["as_json"], wait=p["wait"], no_logs=p["no_logs"],
                      sel=sel, streams=_streams(p, STATUS_STREAMS))
        if code is not None:
            return code
    if p["follow"] and not (p["wait"] or p["as_json"] or p["quiet"]) and _defaults(
            "status", p, _STATUS_FOLLOW_FULL_ONLY):
        ok, timeout = _duration(p["timeout_text"])
        if not ok:
            return None
        from qex.cli.fastfollow import follow_status

        code = follow_status(p["word"], timeout)
        if code is not None:
            return code
    from qex.cli import jobcmd
    from qex.cli.common import get_paths
    from qex.cli.status_core import show_status
    from qex.core.states import Exit

    sel = selection(p) if plain else sel
    quiet, follow, as_json, wait = p["quiet"], p["follow"], p["as_json"], p["wait"]
    if sel is None or (quiet and (follow or as_json)) or (follow and as_json):
        return None
    if both or (p["timeout_text"] and not (wait or follow)):
        return None
    ok, timeout = _duration(p["timeout_text"])
    if not ok:
        return None
    paths = get_paths(Exit.QEX_FAILED)
    kwargs = {"as_json": as_json, "show_env": p["show_env"], "no_logs": p["no_logs"],
              "wait": wait, "follow": follow, "quiet": quiet, "timeout": timeout, "sel": sel,
              "only_stdout": p["only_stdout"], "only_stderr": p["only_stderr"]}
    if not (wait or follow):
        show_status(paths, p["word"], **kwargs)  # it always ends with the exit code
    with jobcmd.interruptible([p["word"]]):
        show_status(paths, p["word"], **kwargs)


def _list(p: dict[str, Any]) -> int | None:
    from qex.cli import fastread
    from qex.core.state_words import filter_words

    states: set[str] = set()
    for word in p["states"]:
        try:
            states |= filter_words(word)
        except ValueError:
            return None  # click says which words it takes
    if _defaults("list", p, ("states", "tags", "group_word", "cwd_dir", "under_dir")):
        code = fastread.list_json() if p["as_json"] else fastread.list_text()
    else:
        code = fastread.list_filtered(
            as_json=p["as_json"], states=states, tags=p["tags"], group_word=p["group_word"],
            cwd_dir=p["cwd_dir"], under_dir=p["under_dir"])
    if code is not None:
        return code
    from qex.cli.list_core import show_list
    from qex.core.states import State

    show_list(as_json=p["as_json"], wanted={State(word) for word in states}, tags=p["tags"],
              group_word=p["group_word"], cwd_dir=p["cwd_dir"], under_dir=p["under_dir"])
    return 0


def _wait(p: dict[str, Any]) -> int | None:
    words = list(p["words"])
    ok, timeout = _duration(p["timeout_text"])
    if not ok or (p["quiet"] and p["as_json"]):
        return None
    if words and not p["as_json"]:
        import time

        from qex.cli.fastwait import left_of, wait_finished, wait_next

        began = time.monotonic()
        lean = wait_next if p["next_only"] else wait_finished
        code = lean(words, quiet=p["quiet"], limit=timeout)
        if code is not None:
            return code
        timeout = left_of(timeout, began)  # the limit covers the whole command
    from qex.cli import jobcmd
    from qex.cli.wait_core import wait_words

    with jobcmd.interruptible(words):
        wait_words(words, timeout, p["next_only"], p["quiet"], p["as_json"])
    return 0


def _logs(p: dict[str, Any]) -> int | None:
    sel = selection(p)
    follow, as_json, hook = p["follow"], p["as_json"], p["hook"]
    out, err = p["only_stdout"], p["only_stderr"]
    if sel is None or (follow and as_json) or (out and err) or (hook and (follow or out or err)):
        return None
    if follow:
        try:
            sel.check_follow()
        except ValueError:
            return None
    if not hook:
        from qex.cli.fastlogs import show
        from qex.core.log_words import STREAMS

        code = show(p["job"], sel, streams=_streams(p, STREAMS), as_json=as_json, follow=follow)
        if code is not None:
            return code
    from qex.cli.logs_core import show_logs

    show_logs(p["job"], sel, follow=follow, as_json=as_json, hook=hook, only_stdout=out,
              only_stderr=err)
    return 0


def _kill(p: dict[str, Any]) -> int | None:
    from qex.core.signal_words import parse_signal

    try:
        signum = parse_signal(p["signal_text"])
    except ValueError:
        return None  # click names the forms it takes
    ok, grace = _duration(p["grace"])
    if not ok:
        return None
    grace_secs = grace or 0.0  # no limit and 0 both mean: send nothing more
    from qex.cli.fastread import stop

    code = stop(p["jobs"], "kill", (signum, grace_secs))
    if code is not None:
        return code
    from qex.cli.stop_core import kill_jobs

    kill_jobs(p["jobs"], signum, grace_secs)
    return 0


def _cancel(p: dict[str, Any]) -> int | None:
    from qex.cli.fastread import stop

    code = stop(p["jobs"], "cancel")
    if code is not None:
        return code
    from qex.cli.stop_core import cancel_jobs

    cancel_jobs(p["jobs"])
    return 0


def _submit_options(p: dict[str, Any], wanted: list[str] | None = None
                    ) -> tuple[dict[str, Any], Wire | None] | None:
    """The options of a `submit_words` request: the job's fields; the `--needs` and
    `--after` words as typed, for the coordinator to resolve; the text of a `--job` file, for
    it to read. Those (and the capabilities in `wanted`) go only to a coordinator that says
    it can (`fastsubmit.capable_wire`, which starts one when nobody listens; an older one
    would refuse the fields): otherwise None, and the full path does that work here. With
    them comes the connection on which the coordinator said so, for the request (None when
    nothing was asked)."""
    options = spec_options(p)
    wanted = list(wanted or ())
    if p["job"]:
        from qex.cli.fastsubmit import job_file_text

        sent = job_file_text(p["job"])
        if sent is None:
            return None
        options["job_file"] = sent
        wanted.append("job-file-text")  # protocol.JOB_FILE_TEXT
    if p["needs"] or p["after"]:
        options.update(needs=list(p["needs"]), after=list(p["after"]))
        wanted.append("dependency-words")  # protocol.DEPENDENCY_WORDS
    if not wanted:
        return options, None
    from qex.cli.fastsubmit import capable_wire

    wire = capable_wire(wanted)
    return None if wire is None else (options, wire)


#: The options that a fan-out refuses, or that need a wait: the full path words them.
_NOT_WITH_EACH_LINE = ("wait", "follow", "quiet", "as_json", "wait_timeout", "job",
                       "dedupe_key", "dedupe_window")


def _submit_lines(p: dict[str, Any]) -> int | None:
    """`submit --each-line INPUT -- CMD {}`, expanded by the coordinator
    (`fastsubmit.submit_lines`): in one request, or for a long input in parts of one group,
    which only a coordinator that takes parts is sent (an older one leaves the input to the
    full path, one request per job)."""
    from qex.core.fanout_source import DEFAULT_MAX_JOBS

    if not p["command_args"] or not _defaults("submit", p, _NOT_WITH_EACH_LINE):
        return None
    max_jobs = p["max_jobs"] if p["max_jobs"] is not None else DEFAULT_MAX_JOBS
    from qex.cli import fastsubmit

    read = fastsubmit.lines_input(p["each_line"])
    if read is None:
        return None
    wanted = ["each-line-text"]  # protocol.EACH_LINE_TEXT
    if len(read[1]) > 1:
        wanted.append("each-line-parts")  # protocol.EACH_LINE_PARTS
    chosen = _submit_options(p, wanted)
    if chosen is None:
        return None
    options, wire = chosen
    return fastsubmit.submit_lines(p, options, source=p["each_line"], max_jobs=max_jobs,
                                   read=read, wire=wire)


def _submit(p: dict[str, Any]) -> int | None:
    if p["each_line"] is not None:
        return _submit_lines(p)
    wait, follow, quiet, as_json = p["wait"], p["follow"], p["quiet"], p["as_json"]
    if p["max_jobs"] is not None or not (p["command_args"] or p["job"]) or (
            quiet and (as_json or not wait)):
        return None
    if (follow and (wait or as_json)) or (p["wait_timeout"] is not None and not (wait or follow)):
        return None
    ok, wait_timeout = _duration(p["wait_timeout"])
    if not ok:
        return None
    chosen = _submit_options(p)
    if chosen is None:
        return None
    from qex.cli import fastsubmit

    options, wire = chosen
    if wait or follow:
        fastsubmit.close_wire(wire)  # each wait opens the connection it needs
        wire = None
    return fastsubmit.submit(p, options, wait=wait, quiet=quiet, as_json=as_json,
                             wait_timeout=wait_timeout, follow=follow, wire=wire)


def _run(p: dict[str, Any]) -> int | None:
    """`qex run -- CMD`: `submit --follow` without its other options."""
    if not (p["command_args"] or p["job"]):
        return None
    chosen = _submit_options(p)
    if chosen is None:
        return None
    from qex.cli import fastsubmit

    options, wire = chosen
    fastsubmit.close_wire(wire)  # the follow opens the connection it needs
    return fastsubmit.submit(p, options, wait=False, quiet=False, as_json=False,
                             wait_timeout=None, follow=True)


def _pipeline(p: dict[str, Any]) -> int | None:
    """`qex pipeline FILE`: the coordinator builds and submits the stages
    (`fastsubmit.submit_pipeline`)."""
    from qex.cli import fastsubmit

    return fastsubmit.submit_pipeline(p["file"], name=p["name"], id_file=p["id_file"],
                                      as_json=p["as_json"])


def _info(p: dict[str, Any]) -> int | None:
    from qex.cli.info_core import show_info

    return show_info(as_json=p["as_json"], no_start=p["no_start"])


def _rerun(p: dict[str, Any]) -> int | None:
    from qex.cli.rerun_core import rerun

    return rerun(p["word"], p["id_file"])


def _events(p: dict[str, Any]) -> int | None:
    ok, limit = _duration(p["timeout_text"])
    if not ok:
        return None
    from qex.cli import events_core

    try:
        return events_core.stream(p["as_json"], p["since_text"], p["count"], limit)
    except events_core.SinceError:
        return None  # click words the mistake


def _until(text: str | None) -> tuple[bool, float | None]:
    """(ok, the wall-clock end or None) for `--for`; not ok when click must word it (a time
    it cannot read, or no time at all)."""
    if text is None:
        return True, None
    ok, seconds = _duration(text)
    if not ok or seconds is None:
        return False, None
    import time

    return True, time.time() + seconds


def _clean(p: dict[str, Any]) -> int | None:
    from qex.cli.clean_core import CleanUsage, clean, clean_on_wire

    options = {"all_jobs": p["all_jobs"], "states": p["states"], "older_than": p["older_than"],
               "cwd_dir": p["cwd_dir"], "under_dir": p["under_dir"], "auto": p["auto"]}
    try:
        code = clean_on_wire(p["words"], **options)
        return code if code is not None else clean(p["words"], **options)
    except CleanUsage:
        return None  # raised before anything was read: click words the mistake


def _pause(p: dict[str, Any]) -> int | None:
    from qex.cli.pause_core import show

    return show(p["as_json"])


def _pause_queue(p: dict[str, Any]) -> int | None:
    ok, until = _until(p["for_text"])
    if not ok or p["drain"]:
        return None  # `--drain` waits on the event stream: the click command
    from qex.cli.pause_core import pause_queue

    return pause_queue(p["reason"], until, p["as_json"])


def _pause_lock(p: dict[str, Any]) -> int | None:
    ok, until = _until(p["for_text"])
    if not ok:
        return None
    from qex.cli.pause_core import pause_lock

    return pause_lock(p["name"], p["reason"], until, p["as_json"])


def _resume_queue(p: dict[str, Any]) -> int | None:
    from qex.cli.pause_core import resume

    return resume({"kind": "queue"}, p["as_json"])


def _resume_lock(p: dict[str, Any]) -> int | None:
    from qex.cli.pause_core import resume

    return resume({"kind": "lock", "name": p["name"]}, p["as_json"])


def _version(p: dict[str, Any]) -> int | None:
    from qex.cli.version_core import lean

    return lean(p["as_json"])


def _help(p: dict[str, Any]) -> int | None:
    from qex.cli.topics import show

    return show(p["topic"])


def _completion(p: dict[str, Any]) -> int | None:
    from qex.cli.completion_scripts import SCRIPTS

    shell = p["shell"] or os.path.basename(os.environ.get("SHELL", ""))
    script = SCRIPTS.get(shell)
    if script is None:
        return None  # click names the shell it does not know, or asks for one
    sys.stdout.write(script + "\n")
    return 0


def _watchers(p: dict[str, Any]) -> int | None:
    from qex.cli.watchers_core import show_watchers

    return show_watchers(as_json=p["as_json"])


def _config_show(p: dict[str, Any]) -> int | None:
    from qex.cli.config_show import show

    return show(as_json=p["as_json"])


def _config_path(p: dict[str, Any]) -> int | None:
    from qex.cli.config_show import show_path

    return show_path()


def _du(p: dict[str, Any]) -> int | None:
    from qex.cli.du_core import show_du

    return show_du(top_n=p["top_n"], as_json=p["as_json"])


def _gc(p: dict[str, Any]) -> int | None:
    from qex.cli.gc_core import GcUsage, collect

    try:
        return collect(older_than=p["older_than"], dry_run=p["dry_run"], as_json=p["as_json"])
    except GcUsage:
        return None  # raised before anything was read: click words the mistake


def _coordinator_stop(p: dict[str, Any]) -> int | None:
    from qex.cli.coordinator_control import stop

    return stop()


def _coordinator_restart(p: dict[str, Any]) -> int | None:
    from qex.cli.coordinator_control import restart

    return restart()


def _schema(p: dict[str, Any]) -> int | None:
    from qex.cli.schema_core import show_schema

    return show_schema(p["name"])


def _daemon(p: dict[str, Any]) -> int | None:
    from qex.cli.daemon_start import run_daemon

    run_daemon()
    return 0


HANDLERS: dict[str, Callable[[dict[str, Any]], int | None]] = {
    "submit": _submit, "run": _run, "wait": _wait, "status": _status, "list": _list, "logs": _logs,
    "kill": _kill, "cancel": _cancel, "clean": _clean, "info": _info, "daemon": _daemon,
    "pipeline": _pipeline, "rerun": _rerun, "events": _events, "pause": _pause,
    "pause queue": _pause_queue, "pause lock": _pause_lock, "resume": _resume_queue,
    "resume queue": _resume_queue, "resume lock": _resume_lock, "version": _version,
    "help": _help, "completion": _completion, "watchers": _watchers,
    "config show": _config_show, "config path": _config_path, "du": _du, "gc": _gc,
    "coordinator stop": _coordinator_stop, "coordinator restart": _coordinator_restart,
    "schema": _schema,
}
