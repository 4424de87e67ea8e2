"""The `qex` entry point: a click group that imports each command only when it runs.

A status query must not pay for YAML, psutil or the other commands' modules, so the table
below names modules, and `LazyGroup` imports one on demand. Each command module defines a
click command object called `command`.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from qex import __version__

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

#: Commands that give the result of a job use the exit-code band, so a usage error there
#: is 121 and not click's 2 (`qex help exit-codes`).
BAND_COMMANDS = frozenset({"submit", "run", "pipeline", "wait", "status", "rerun"})


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, (_, _, hidden) in COMMANDS.items() if not hidden]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module = importlib.import_module(entry[0])
        command: click.Command = module.command
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Short help from the table, so `qex --help` imports no command module.
        rows = [(name, text) for name, (_, text, hidden) in COMMANDS.items() if not hidden]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


BANNER = (
    " ==> AGENTS: read `qex help agents` first. It is short and complete: how to start a job,\n"
    "     wait for it and read its output. Never write a monitor loop; `qex wait` is that loop.\n"
)


@click.group(cls=LazyGroup, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="qex", message="%(prog)s %(version)s")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """qex queues heavy work on one machine: each job claims cores, memory, GPUs or locks,
    waits until the machine has room, runs under a supervisor that outlives your shell, and
    leaves a record that any later session can attach to by id."""
    if ctx.invoked_subcommand is None:
        click.echo(BANNER)
        click.echo(ctx.get_help())
        ctx.exit(0)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    first = next((a for a in args if not a.startswith("-")), None)
    try:
        rc = cli.main(args=args, prog_name="qex", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        sys.exit(121 if first in BAND_COMMANDS else 2)
    except click.UsageError as exc:
        exc.show()
        sys.exit(121 if first in BAND_COMMANDS else 2)
    except click.exceptions.Abort:
        sys.exit(122 if first in BAND_COMMANDS else 1)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        # `qex list | head`: the reader left; end quietly like any Unix filter.
        # Point stdout at /dev/null so the interpreter's final flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
    sys.exit(rc if isinstance(rc, int) else 0)


def fail(message: str, code: int) -> Any:
    """Print one sentence on stderr as `qex: ...` and exit with `code`."""
    click.echo(f"qex: {message}", err=True)
    sys.exit(code)
