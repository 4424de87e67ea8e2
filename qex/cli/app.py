"""The click application: a group that imports each command only when it runs.

`qex.cli.main` decides first whether a fast path answers the request without click; only
otherwise is this module (and click) imported.
"""

from __future__ import annotations

import importlib
import sys

import click

from qex import __version__
from qex.cli import exits
from qex.cli.help_fast import BANNER
from qex.cli.main import COMMANDS, reader_left
from qex.platform import collector


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, (_, _, hidden) in COMMANDS.items() if not hidden]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module = importlib.import_module(entry[0])
        collector.release()  # held for the imports (`qex.cli.main.main`)
        command: click.Command = module.command
        return command

    def resolve_command(self, ctx: click.Context, args: list[str],
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if (name and not name.startswith("-") and name not in COMMANDS
                and not ctx.resilient_parsing):
            raise click.UsageError(unknown_command(name), ctx)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Short help from the table, so `qex --help` imports no command module.
        rows = [(name, text) for name, (_, text, hidden) in COMMANDS.items() if not hidden]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def unknown_command(name: str) -> str:
    """The usage error for a command that does not exist, with the nearest names."""
    import difflib

    visible = [n for n, (_, _, hidden) in COMMANDS.items() if not hidden]
    close = difflib.get_close_matches(name.lower(), visible, n=3, cutoff=0.6)
    if not close:
        return f"there is no command `{name}`; `qex --help` lists them all"
    options = " or ".join(f"`qex {c}`" for c in close)
    return f"there is no command `{name}`; did you mean {options}?"


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


class _NeverRaised(Exception):
    """Stands in for an exception class this click does not have."""


#: click 8.2 raises this for a group called with no arguments; click 8.1 (Debian 12) has no
#: such class and exits through `Exit` after printing the help.
NO_ARGS_IS_HELP: type[Exception] = getattr(click.exceptions, "NoArgsIsHelpError", _NeverRaised)


def run(args: list[str], first: str | None) -> None:
    """Run the click application; usage errors in job-speaking commands give 121."""
    stdout = sys.stdout
    try:
        rc = cli.main(args=args, prog_name="qex", standalone_mode=False)
    except NO_ARGS_IS_HELP as exc:
        ctx = getattr(exc, "ctx", None)
        click.echo(ctx.get_help() if ctx else str(exc))
        sys.exit(exits.usage(first))
    except click.UsageError as exc:
        exc.show()
        sys.exit(exits.usage(first))
    except click.exceptions.Abort:
        sys.exit(exits.interrupted(first))
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        reader_left()
        sys.exit(0)
    except SystemExit:
        # click meets a broken pipe itself: it wraps both streams so that their flushes stay
        # quiet, and exits 1. The reader leaving is no failure of the command.
        if sys.stdout is not stdout:
            reader_left()
            sys.exit(0)
        raise
    sys.exit(rc if isinstance(rc, int) else 0)
