"""`qex rerun ID`: submit a job again from its recorded spec, under a new id.

The recorded spec is the exact job that ran (its environment, directory and claim), so a
rerun repeats the work and not a new guess. It is a new, independent job: it waits for no
other job, belongs to no group, and carries no dedupe key (a key would hand back the old
job instead of running the new one).
"""

from __future__ import annotations

from typing import Any

import click

from qex.cli.path_text import FILE


def _complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from qex.cli.complete_ids import complete_ids

    return complete_ids(ctx, param, incomplete)


@click.command("rerun")
@click.argument("word", metavar="ID", shell_complete=_complete)
@click.option("--id-file", metavar="FILE", type=FILE,
              help="Write the new id here (atomically) before anything else happens.")
def command(word: str, id_file: str | None) -> None:
    """Queue a job again from its recorded spec and print the new id."""
    from qex.cli.rerun_core import rerun, show

    if rerun(word, id_file) is not None:
        return
    # Nobody listens, the word is not one plain job, or the coordinator is older than the
    # `rerun` request: resolve here, and submit the spec from this command.
    import time

    from qex.cli import jobcmd
    from qex.cli.common import get_paths, load_config
    from qex.cli.reach import open_connection
    from qex.cli.resolve import resolve
    from qex.cli.submitting import Submitter
    from qex.core.names import new_id
    from qex.core.rerun_spec import again, unreadable
    from qex.core.states import Exit
    from qex.platform.machine import machine
    from qex.store.jobs import read_spec

    paths = get_paths(Exit.QEX_FAILED)
    conn = open_connection(paths, start=True)
    assert conn is not None
    old = resolve(conn, paths, word, one_job=True).jobs[0]
    old_id = str(old["id"])
    spec = read_spec(paths.job_dir(old_id))
    if spec is None or not spec.command:
        jobcmd.fail(unreadable(old_id))
    fresh = again(spec, job_id=new_id(), now=time.time())
    submitter = Submitter(paths=paths, config=load_config(paths, Exit.QEX_FAILED),
                          machine=machine(), conn=conn)
    submitter.preflight([fresh.to_dict()])
    answer = submitter.send(fresh)
    show({"result": "submitted", **answer}, old_id, id_file)
