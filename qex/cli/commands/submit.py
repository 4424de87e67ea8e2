"""`qex submit -- CMD`: queue a job and print its id (or wait for it, or follow it).

A plain submit exits 0 once the job is queued: the code says the work was accepted, not how
it ended. `--wait` and `--follow` speak for the job and give its exit code (the band).
"""

from __future__ import annotations

from typing import Any

import click

from qex.cli.path_text import FILE
from qex.cli.submitting import COMMAND_SETTINGS, spec_options


@click.command("submit", context_settings=COMMAND_SETTINGS)
@spec_options
@click.option("--wait", "wait", is_flag=True,
              help="Wait for the job to stop, print its record, and exit with its code.")
@click.option("--follow", is_flag=True,
              help="Like `qex run`: copy the output here until the job stops.")
@click.option("-q", "--quiet", is_flag=True,
              help="With --wait: print no record and no queue reason; the code is the answer.")
@click.option("--wait-timeout", metavar="TIME",
              help="With --wait: stop waiting after this time (124); the job goes on.")
@click.option("--json", "as_json", is_flag=True,
              help="Print {id, deduplicated}, or with --wait the final record, as JSON.")
@click.option("--each-line", metavar="FILE|-", type=FILE,
              help="One job per line of FILE (or stdin); `{}` in the command takes the line.")
@click.option("--max-jobs", type=click.IntRange(min=1), metavar="N",
              help="With --each-line: the most jobs one input may give (default 1000).")
def command(**values: Any) -> None:
    """Queue a job. The command after `--` runs with no shell, in this directory, with this
    environment; the id goes to stdout (to stderr with --wait or --follow)."""
    from qex.cli.common import get_paths
    from qex.cli.jobcmd import fail
    from qex.cli.submit_flow import FOLLOW, PLAIN, WAIT, parse_wait_timeout, submit_one
    from qex.core.states import Exit

    wait = bool(values.pop("wait"))
    follow = bool(values.pop("follow"))
    quiet = bool(values.pop("quiet"))
    as_json = bool(values.pop("as_json"))
    wait_timeout_text = values.pop("wait_timeout")
    each_line = values.pop("each_line")
    max_jobs = values.pop("max_jobs")
    if wait and follow:
        fail("--wait prints the record at the end and --follow copies the output as it comes; "
             "give one of them")
    if quiet and not (wait or follow):
        fail("--quiet silences a wait, so give it with --wait (a plain submit prints only the id)")
    if quiet and as_json:
        fail("--quiet prints nothing and --json prints the record; give one of them")
    if follow and as_json:
        fail("--follow copies the output, so it cannot print JSON; use --wait --json")
    if wait_timeout_text is not None and not (wait or follow):
        fail("--wait-timeout limits a wait, so give it with --wait")
    if max_jobs is not None and each_line is None:
        fail("--max-jobs limits --each-line, so give it with --each-line")
    paths = get_paths(Exit.QEX_FAILED)
    if each_line is not None:
        refused = [flag for flag, given in (
            ("--wait", wait), ("--follow", follow), ("--json", as_json),
            ("--job", values.get("job") is not None),
            ("--dedupe-key", values.get("dedupe_key") is not None),
            ("--dedupe-window", values.get("dedupe_window") is not None),
        ) if given]
        if refused:
            fail(f"--each-line does not take {', '.join(refused)}: a fan-out is many jobs, so "
                 "keep the group id it prints (or --id-file NAME.json) and run `qex wait` on it")
        from qex.cli.fanout_submit import submit_fanout
        from qex.core.fanout_source import DEFAULT_MAX_JOBS

        submit_fanout(paths, values, source=each_line, max_jobs=max_jobs or DEFAULT_MAX_JOBS)
    mode = WAIT if wait else FOLLOW if follow else PLAIN
    submit_one(paths, values, mode=mode, quiet=quiet, as_json=as_json,
               wait_timeout=parse_wait_timeout(wait_timeout_text))
