"""`qex status ID`: the record of a job, or of every job of a group.

The plain form is a FAST PATH (`qex status <id> --json` is what a script polls), so this
module imports nothing heavy: the coordinator is asked for one record, and without one the
record is read from disk. `--wait` and `--follow` attach to the job and give its exit code;
they never stop it (Ctrl-C gives 122).
"""

from __future__ import annotations

from typing import Any

import click

from qex.cli.common import get_paths
from qex.cli.log_options import pop_selection, selection_options
from qex.cli.status_core import show_status
from qex.core.states import Exit


def _complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from qex.cli.complete_ids import complete_ids

    return complete_ids(ctx, param, incomplete)


@click.command("status")
@click.argument("word", metavar="ID", shell_complete=_complete)
@click.option("--json", "as_json", is_flag=True,
              help="Print the record as JSON (an array for a group).")
@click.option("--show-env", is_flag=True,
              help="Include the job's environment (it can hold secrets).")
@click.option("--no-logs", is_flag=True, help="Leave out the last lines of the output.")
@click.option("--wait", "wait", is_flag=True,
              help="Wait until the job stops, then show the record.")
@click.option("--follow", is_flag=True,
              help="Copy the job's output here from its first line until it stops.")
@click.option("-q", "--quiet", is_flag=True,
              help="Print nothing; the exit code is the answer (100 while the job runs).")
@click.option("--timeout", "timeout_text", metavar="TIME",
              help="With --wait or --follow: stop waiting after this time (exit 124).")
@click.option("--stdout", "only_stdout", is_flag=True, help="Show only the standard output.")
@click.option("--stderr", "only_stderr", is_flag=True, help="Show only the standard error.")
@selection_options
def command(word: str, *, as_json: bool, show_env: bool, no_logs: bool, wait: bool, follow: bool,
            quiet: bool, timeout_text: str | None, only_stdout: bool, only_stderr: bool,
            **selection: Any) -> None:
    """Show the record of a job: state, exit code, claim and use, why it waits, and, for a
    job that did not complete, the last lines of its output."""
    from qex.cli import jobcmd

    sel = pop_selection(selection)
    if quiet and (follow or as_json):
        jobcmd.fail("--quiet prints nothing, so it does not go with --follow or --json")
    if follow and as_json:
        jobcmd.fail("--follow copies the output as it comes and --json prints one document; "
                    "use --wait --json for the record")
    if only_stdout and only_stderr:
        jobcmd.fail("--stdout and --stderr each choose one stream; give neither for both")
    timeout: float | None = None
    if timeout_text is not None:
        if not (wait or follow):
            jobcmd.fail("--timeout limits a wait, so give it with --wait or --follow")
        from qex.core.units import UnitError, parse_duration

        try:
            timeout = parse_duration(timeout_text, what="--timeout")
        except UnitError as exc:
            jobcmd.fail(str(exc))
    paths = get_paths(Exit.QEX_FAILED)
    if wait or follow:
        with jobcmd.interruptible([word]):
            show_status(paths, word, as_json=as_json, show_env=show_env, no_logs=no_logs, wait=wait,
                    follow=follow, quiet=quiet, timeout=timeout, sel=sel,
                    only_stdout=only_stdout, only_stderr=only_stderr)
    else:
        show_status(paths, word, as_json=as_json, show_env=show_env, no_logs=no_logs, wait=wait,
                follow=follow, quiet=quiet, timeout=timeout, sel=sel, only_stdout=only_stdout,
                only_stderr=only_stderr)
