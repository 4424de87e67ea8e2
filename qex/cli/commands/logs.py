"""`qex logs ID`: the part of a job's output that you want, from disk, with no coordinator
needed. Every view says what it left out, so a part of a log is never taken for all of it."""

from __future__ import annotations

from typing import Any

import click

from qex.cli.log_options import pop_selection, selection_options


def _complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from qex.cli.complete_ids import complete_ids

    return complete_ids(ctx, param, incomplete)


@click.command("logs")
@click.argument("job", metavar="ID", shell_complete=_complete)
@click.option("-f", "--follow", is_flag=True,
              help="Print the last lines, then each new line until the job stops.")
@click.option("--json", "as_json", is_flag=True, help="Print the selection as one JSON object.")
@click.option("--hook", is_flag=True,
              help="Read the output of the stop hook and qex's verdict on it.")
@click.option("--stdout", "only_stdout", is_flag=True, help="Only the standard output.")
@click.option("--stderr", "only_stderr", is_flag=True, help="Only the standard error.")
@selection_options
def command(*, job: str, follow: bool, as_json: bool, hook: bool, only_stdout: bool,
            only_stderr: bool, **selection: Any) -> None:
    """Print the output of one job: both streams, the last 500 lines of each, unless you
    choose lines. A job named by a group is refused: name one stage."""
    sel = pop_selection(selection)
    if follow and as_json:
        raise click.UsageError(
            "--json prints one document, and --follow never ends; give one of them")
    if only_stdout and only_stderr:
        raise click.UsageError(
            "--stdout and --stderr each choose one stream; give neither for both")
    if hook and (follow or only_stdout or only_stderr):
        raise click.UsageError("--hook reads the stop hook's own log; it does not take --follow, "
                               "--stdout or --stderr")
    if follow:
        try:
            sel.check_follow()
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None

    from qex.cli.logs_core import show_logs

    show_logs(job, sel, follow=follow, as_json=as_json, hook=hook, only_stdout=only_stdout,
              only_stderr=only_stderr)
