"""`qex rerun ID`: submit a job again from its recorded spec, under a new id.

The recorded spec is the exact job that ran (its environment, directory and claim), so a
rerun repeats the work and not a new guess. It is a new, independent job: it waits for no
other job, belongs to no group, and carries no dedupe key (a key would hand back the old
job instead of running the new one).
"""

from __future__ import annotations

from typing import Any

import click


def _complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from qex.cli.complete_ids import complete_ids

    return complete_ids(ctx, param, incomplete)


@click.command("rerun")
@click.argument("word", metavar="ID", shell_complete=_complete)
@click.option("--id-file", metavar="FILE",
              help="Write the new id here (atomically) before anything else happens.")
def command(word: str, id_file: str | None) -> None:
    """Queue a job again from its recorded spec and print the new id."""
    import time

    from qex.cli import jobcmd
    from qex.cli.common import get_paths, load_config, print_warnings, warn
    from qex.cli.idfile import single_text, write_id_file
    from qex.cli.reach import open_connection
    from qex.cli.resolve import resolve
    from qex.cli.submitting import Submitter
    from qex.core import model
    from qex.core.names import derive_name, is_safe_name, new_id, safe_name, short_id
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
        jobcmd.fail(f"the spec of the job {old_id} is missing or unreadable, so qex cannot run "
                    "it again; submit the command anew with `qex submit`")
    name = safe_name(spec.name)
    if not is_safe_name(name):
        name = derive_name(spec.command[0])
    fresh = model.replace(
        spec, id=new_id(), submitted_at=time.time(), name=name, needs=[], after=[], group=None,
        group_name=None, dedupe_key=None, dedupe_window=0,
    )
    submitter = Submitter(paths=paths, config=load_config(paths, Exit.QEX_FAILED),
                          machine=machine(), conn=conn)
    submitter.preflight([fresh.to_dict()])
    answer = submitter.send(fresh)
    new = answer["id"]
    print_warnings(answer)
    write_id_file(id_file, single_text(new))
    warn(f"the job {short_id(old_id)} runs again as {new}")
    click.echo(new)
