"""The body of `qex list` with its filters, free of click. The plain `qex list [--json]`
is answered by `qex.cli.fastread` while a coordinator listens, with the same table."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from typing import Any

from qex.cli.common import canonical_dir, die, get_paths, print_json, warn
from qex.core.states import Exit, State


def show_list(*, as_json: bool, wanted: set[State] | None = None, tags: Iterable[str] = (),
              group_word: str | None = None, cwd_dir: str | None = None,
              under_dir: str | None = None) -> None:
    """Print the jobs (all, or those the filters keep) as a table or one JSON array."""
    from qex.cli.queue_lines import pause_lines
    from qex.cli.reach import open_connection, pause_state
    from qex.core import job_filters as jf
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

    def several(ids: list[str]) -> None:
        if not as_json:
            warn(jf.several_groups_line(str(group_word), ids))

    try:
        chosen = jf.chosen_jobs(records, states=wanted or (), tags=tags, group_word=group_word,
                                cwd_dir=canonical_dir(cwd_dir) if cwd_dir is not None else None,
                                under_dir=canonical_dir(under_dir) if under_dir is not None
                                else None, on_groups=several)
    except LookupError:
        die(no_group_message(str(group_word)), Exit.NO_SUCH_JOB)
    chosen = sorted(chosen, key=sort_key)

    if as_json:
        print_json([display_record(r) for r in chosen])
        return
    from qex.cli.render_table import table_lines

    sys.stdout.write("\n".join(table_lines(chosen, records, now)) + "\n")


def no_group_message(word: str) -> str:
    return f"there is no group with the id or the name `{word}`; run `qex list` to see the groups"


def damaged_line(entry: dict[str, Any]) -> str:
    """One job whose record cannot be read (an entry of the coordinator's `damaged`)."""
    from qex.core.word_match import damaged_message

    return damaged_message(str(entry.get("id")), str(entry.get("path")))
