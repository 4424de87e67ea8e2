"""The line-selection options, shared by `qex logs` and `qex status`.

One decorator adds `--tail --head --lines --grep --fixed -C --number --max-matches --all`,
and `selection_from` turns the parsed values into a `Selection`, so both commands accept the
same words and refuse the same mistakes with the same sentences.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from qex.core.logsel import Selection, SelectionError, parse_range

F = TypeVar("F", bound=Callable[..., Any])

#: The keyword names the decorator adds to the command function.
OPTION_NAMES = ("tail", "head", "lines", "grep", "fixed", "context", "number", "max_matches",
                "all_lines")


def selection_options(func: F) -> F:
    """Add the selection options (keyword names in OPTION_NAMES) to a click command."""
    decorators = [
        click.option("--tail", type=click.IntRange(min=0), metavar="N",
                     help="The last N lines of each stream (the default is 500)."),
        click.option("--head", type=click.IntRange(min=0), metavar="N",
                     help="The first N lines: a fault at the start."),
        click.option("--lines", metavar="N:M", help="Lines N to M, counted from 1."),
        click.option("--grep", metavar="REGEX",
                     help="Only lines that match this Python regular expression; reports the "
                          "number of matches."),
        click.option("--fixed", is_flag=True, help="Read the --grep value as plain text."),
        click.option("-C", "--context", type=click.IntRange(min=0), default=0, metavar="N",
                     help="N lines before and after each match of --grep."),
        click.option("-n", "--number", is_flag=True,
                     help="Write the line number before each line."),
        click.option("--max-matches", type=click.IntRange(min=0), metavar="N",
                     help="Show at most N matches of --grep (the default is 100) and count "
                          "the rest."),
        click.option("--all", "all_lines", is_flag=True,
                     help="Every line (and every match). Lines that qex dropped at the output "
                          "limit stay gone."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def selection_from(values: dict[str, Any]) -> Selection:
    """The Selection for the parsed option values; a mistake is a click usage error."""
    try:
        lines = parse_range(values["lines"]) if values.get("lines") else None
        return Selection(
            tail=values.get("tail"), head=values.get("head"), lines=lines,
            grep=values.get("grep"), fixed=bool(values.get("fixed")),
            context=int(values.get("context") or 0), number=bool(values.get("number")),
            max_matches=values.get("max_matches"), all=bool(values.get("all_lines")),
        )
    except SelectionError as exc:
        raise click.UsageError(str(exc)) from None


def pop_selection(values: dict[str, Any]) -> Selection:
    """Remove the selection values from a command's kwargs and build the Selection."""
    picked = {name: values.pop(name, None) for name in OPTION_NAMES}
    return selection_from(picked)
