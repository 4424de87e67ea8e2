"""The body of `qex list` with its filters, free of click. The plain `qex list [--json]`
is answered by `qex.cli.fastread` while a coordinator listens, with the same table."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from typing import Any

from qex.cli.common import die, get_paths, print_json, warn
from qex.core.states import Exit, State


def show_list(*, as_json: bool, wanted: set[State] | None = None, tags: Iterable[str] = (),
              group_word: str | None = None, cwd_dir: str | None = None,
              under_dir: str | None = None) -> None:
    """Print the jobs (all, or those the filters keep) as a table or one JSON array."""
    from qex.cli import job_filters as jf
    from qex.cli.queue_lines import pause_lines
    from qex.cli.reach import open_connection, pause_state
    from qex.core.record_json import display_record, sort_key

    paths = get_paths()
    conn = open_connection(paths, start=True)
    assert conn is not None
    damaged: list[dict[str, Any]] = []
    # With a state filter the coordinator sends only the jobs in those states and the active
    # ones (their pools are counted below); a group is looked up among every job.
    states = {s.value for s in wanted} if wanted and group_word is None else None
    with conn:
        records = conn.list_jobs(damaged, states=states)
        pauses = pause_state(conn)
    now = time.time()
    for line in pause_lines(pauses, now):
        warn(line)
    for entry in damaged:
        warn(damaged_line(entry))

    chosen: list[dict[str, Any]] = records
    if group_word is not None:
        groups = jf.groups_named(records, group_word)
        if not groups:
            die(f"there is no group with the id or the name `{group_word}`; run `qex list` to "
                "see the groups", Exit.NO_SUCH_JOB)
        if len(groups) > 1 and not as_json:
            ids = ", ".join(sorted(groups))
            warn(f"`{group_word}` names {len(groups)} groups, and this list shows all of them: "
                 f"{ids}; give a group id to see one")
        members = {str(r.get("id")) for stages in groups.values() for r in stages}
        chosen = [r for r in chosen if str(r.get("id")) in members]
    if wanted:
        chosen = [r for r in chosen if jf.has_state(r, wanted)]
    if tags:
        chosen = [r for r in chosen if jf.has_tags(r, tags)]
    if cwd_dir is not None:
        here = jf.canonical_dir(cwd_dir)
        chosen = [r for r in chosen if jf.in_dir(r, here, below=False)]
    if under_dir is not None:
        top = jf.canonical_dir(under_dir)
        chosen = [r for r in chosen if jf.in_dir(r, top, below=True)]
    chosen = sorted(chosen, key=sort_key)

    if as_json:
        print_json([display_record(r) for r in chosen])
        return
    from qex.cli.render_table import table_lines

    sys.stdout.write("\n".join(table_lines(chosen, records, now)) + "\n")


def damaged_line(entry: dict[str, Any]) -> str:
    """One job whose record cannot be read: where it is, and what becomes of it."""
    from qex.core.names import visible

    return (f"the job {visible(str(entry.get('id')))} is DAMAGED: its record "
            f"{visible(str(entry.get('path')))} cannot be read, so qex neither runs nor reports "
            "it; `qex gc` deletes its directory once it is older than [gc] keep, or delete it "
            "yourself")
