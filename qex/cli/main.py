"""The `qex` entry point. It answers the hot commands (see `qex.cli.fast`), the help pages
(`qex.cli.help_fast`) and the Tab presses of the completion scripts (`qex.cli.fastcomplete`)
without click, and hands everything else to the click application in
`qex.cli.app`.

A status query must not pay for YAML, psutil or the other commands' modules, so the table
below names modules, and `qex.cli.app.LazyGroup` imports one on demand. Each command module
defines a click command object called `command`.
"""

from __future__ import annotations

import sys

#: name -> (module, short help, hidden). The order is the order of `qex --help`.
COMMANDS: dict[str, tuple[str, str, bool]] = {
    "submit": ("qex.cli.commands.submit", "Queue a job and print its id.", False),
    "run": ("qex.cli.commands.run", "Queue a job and stream its output until it stops.", False),
    "pipeline": ("qex.cli.commands.pipeline", "Submit the stages of a pipeline file as one group.", False),
    "wait": ("qex.cli.commands.wait", "Wait for jobs to stop and give their exit code.", False),
    "status": ("qex.cli.commands.status", "Show the record of a job (or of every stage of a group).", False),
    "list": ("qex.cli.commands.list", "List jobs, their states and why they wait.", False),
    "logs": ("qex.cli.commands.logs", "Read or follow a job's output.", False),
    "kill": ("qex.cli.commands.kill", "Send a signal to running jobs.", False),
    "cancel": ("qex.cli.commands.cancel", "Take queued jobs out of the queue.", False),
    "rerun": ("qex.cli.commands.rerun", "Submit a job again from its recorded spec, under a new id.", False),
    "clean": ("qex.cli.commands.clean", "Delete the records of jobs that stopped.", False),
    "gc": ("qex.cli.commands.gc", "Delete old records and directories that hold no record.", False),
    "du": ("qex.cli.commands.du", "Show the disk space that job records use.", False),
    "events": ("qex.cli.commands.events", "Stream one line per job change.", False),
    "top": ("qex.cli.commands.top", "Watch jobs, their claims and their live use.", False),
    "info": ("qex.cli.commands.info", "Show the coordinator, the budget and the load.", False),
    "pause": ("qex.cli.commands.pause", "Pause the queue or take a lock; alone, show what is paused.", False),
    "resume": ("qex.cli.commands.resume", "Resume the queue or give a lock back.", False),
    "config": ("qex.cli.commands.config", "Show the configuration in force, or its path.", False),
    "systemd": ("qex.cli.commands.systemd", "Install or remove the socket-activated user units.", False),
    "coordinator": ("qex.cli.commands.coordinator", "Stop or restart the coordinator (jobs keep running).", False),
    "pool": ("qex.cli.commands.pool", "Discover GPUs and print a [[pool]] section for them.", False),
    "schema": ("qex.cli.commands.schema", "Print the JSON Schema of a record format.", False),
    "help": ("qex.cli.commands.help", "Read a help topic (agents, config, exit-codes, ...).", False),
    "watchers": ("qex.cli.commands.watchers", "Find hand-written monitor loops on this machine.", False),
    "completion": ("qex.cli.commands.completion", "Print a shell completion script.", False),
    "version": ("qex.cli.commands.version", "Show the version of qex and of its coordinator.", False),
    "daemon": ("qex.cli.commands.daemon", "Run the coordinator (started for you).", True),
    "supervise": ("qex.cli.commands.supervise", "Run the supervisor of one job (started for you).", True),
    "__complete": ("qex.cli.commands.complete", "List completion candidates.", True),
}


def main(argv: list[str] | None = None) -> None:
    """Run one command. A failure that reaches this far (the client's errors, a command's
    `exits.Failure`) becomes its sentence and the code that `qex.cli.exits` gives it."""
    args = sys.argv[1:] if argv is None else argv
    first = next((a for a in args if not a.startswith("-")), None)
    from qex.cli import exits, fast
    from qex.client.errors import ClientError

    try:
        if not args or args[-1] in ("--help", "-h"):  # `qex.cli.help_fast.HELP_FLAGS`
            import os

            from qex.cli.help_fast import COMPLETE_VAR, answer_help

            if not args and COMPLETE_VAR in os.environ:  # a Tab press of the scripts
                from qex.cli.fastcomplete import answer

                code = answer()
            else:
                code = answer_help(args)
            if code is not None:
                sys.exit(code)
        if args and (args[0] == first or args == ["--version"]):
            code = fast.answer(args)
            if code is not None:
                sys.exit(code)
        if OWN_PROCESS:
            # The full path's imports (click, the command's module) are most of a rare
            # command's time; `LazyGroup.get_command` releases the collector after them. Not
            # in a caller's process, whose heap the release would freeze.
            from qex.platform import collector

            collector.hold()
        from qex.cli.app import run

        run(args, first)
    except (ClientError, exits.Failure) as exc:
        exits.report(exc, first)


#: True once `program` runs: this process is the `qex` program, not a caller of `main`.
OWN_PROCESS = False


def program() -> None:
    """The process's entry (the `qex` script and `python -m qex`): `main`, then `leave`.

    Separate from `main` because only a process of its own may end without the interpreter's
    teardown, or fork itself into a coordinator (`qex.cli.wire`); tests and embedders call
    `main` and get its `SystemExit` and a spawned coordinator as before."""
    global OWN_PROCESS
    OWN_PROCESS = True
    try:
        main()
    except SystemExit as exc:
        leave(exc.code)
    leave(None)


def leave(code: object) -> None:
    """End the process with `code`, as `sys.exit(code)` would, but skip the interpreter's
    teardown when nothing is left that needs it.

    Why: after a command's work, tearing the interpreter down (every module's dictionary, the
    collector's last pass) took about 2 ms, a tenth of a hot command's whole run (measured
    against a bare `python -c pass`: 12.9 ms with the teardown, 11.0 ms with `os._exit`).
    A command has closed the files it wrote by the time it returns. The teardown still runs
    when something might need it: a code that is not a number (it prints it), a thread
    still alive (the teardown joins it), `logging`, `multiprocessing` or `tempfile` loaded
    (their exit handlers flush, reap and delete), or an output that will not flush (the
    teardown reports that, and gives the code it always gave)."""
    status = 0 if code is None else code
    if isinstance(status, int) and _nothing_needs_teardown():
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        else:
            import os

            os._exit(status & 0xFF)
    raise SystemExit(code)


def reader_left() -> None:
    """The reader of stdout has gone (`qex list | head`): point stdout at /dev/null, so that
    the interpreter's last flush cannot fail again. The command then ends with 0, like any
    Unix filter, on the fast path and on click's alike."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


#: Modules that register work for the interpreter's exit (flushing log handlers, reaping
#: worker processes, deleting temporary files); none is on a hot command's path.
_EXIT_HANDLER_MODULES = ("logging", "multiprocessing", "tempfile")


def _nothing_needs_teardown() -> bool:
    if any(name in sys.modules for name in _EXIT_HANDLER_MODULES):
        return False
    return single_threaded()


def single_threaded() -> bool:
    """True when this process runs no thread but its main one (without importing
    `threading`: a process that never imported it has started none through it)."""
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() <= 1
