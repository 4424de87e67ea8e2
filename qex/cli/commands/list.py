"""`qex list`: every job, its state, its claim, and why it waits or how it ended."""

from __future__ import annotations

import click

from qex.cli.dir_options import directory_options


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the records as one JSON array.")
@click.option("--state", "states", multiple=True, metavar="STATE",
              help="Only jobs in this state; `done` = every final state, `active` = not final. "
                   "Repeat for several.")
@click.option("--tag", "tags", multiple=True, metavar="TAG",
              help="Only jobs that carry this tag. Repeat to require several.")
@click.option("--group", "group_word", metavar="GROUP",
              help="Only the stages of this group (a group id, its prefix or its name).")
@directory_options
def command(*, as_json: bool, states: tuple[str, ...], tags: tuple[str, ...],
            group_word: str | None, cwd_dir: str | None, under_dir: str | None) -> None:
    """List the jobs in submission order, with their claims and why each waits or how it
    ended. A paused queue is reported on stderr first, so an empty morning has a cause."""
    from qex.cli.list_core import show_list
    from qex.core.states import State, parse_state_filter

    wanted: set[State] = set()
    for word in states:
        try:
            wanted |= parse_state_filter(word)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--state") from None
    show_list(as_json=as_json, wanted=wanted, tags=tags, group_word=group_word,
              cwd_dir=cwd_dir, under_dir=under_dir)
