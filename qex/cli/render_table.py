"""The `qex list` table: ID STATE NAME CPU MEM TIME NOTE, one job per line.

Pure apart from `use_color`/`terminal_width`, which look at a stream and the environment.
The cells come from `qex.core.record_view.row_cells`, here or in the coordinator
(`list_table`); laying out rows that the coordinator made imports nothing more.
On a terminal the table fits the width and the NOTE is cut; in a pipe nothing is cut, so a
script that greps the output sees every word. Colour only marks the state, and only on a
terminal that wants colour (no NO_COLOR, no TERM=dumb).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any, TextIO

    from qex.core.record_view import RecordLike

NAME_WIDTH = 16
HEADERS = ("ID", "STATE", "NAME", "CPU", "MEM", "TIME", "NOTE")
_GAP = "  "

_STATE_COLOURS = {
    "queued": "33",      # yellow
    "starting": "36",    # cyan
    "running": "36",
    "completed": "32",   # green
    "failed": "31",      # red
    "killed": "31",
    "timeout": "31",
    "oom": "31;1",
    "expired": "35",     # magenta
    "cancelled": "2",    # dim
    "skipped": "2",
}


def use_color(stream: TextIO, *, disabled: bool = False,
              env: Mapping[str, str] | None = None) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set or TERM is dumb."""
    source = os.environ if env is None else env
    if disabled or source.get("NO_COLOR") or source.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def terminal_width(stream: TextIO) -> int | None:
    """The width to fit, or None when the stream is not a terminal (then nothing is cut)."""
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    import shutil  # only a terminal pays for it

    return max(40, shutil.get_terminal_size((100, 24)).columns)


def paint(text: str, code: str | None, color: bool) -> str:
    if not color or not code:
        return text
    return f"\x1b[{code}m{text}\x1b[0m"


def state_colour(state: str) -> str | None:
    return _STATE_COLOURS.get(state)


def cut(text: str, width: int) -> str:
    """Cut to `width` characters, marking the cut with `~` so a reader knows text is missing."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return text[: width - 1] + "~" if width > 1 else text[:width]


def render_jobs(records: Sequence[RecordLike], *, now: float, width: int | None = None,
                color: bool = False) -> list[str]:
    """The header and one line per record, in the order given.

    `width` None means "not a terminal": no cell is cut. Otherwise NAME is cut to 16
    characters and NOTE to what is left of the line.
    """
    from qex.core.record_view import row_cells

    return render_rows([row_cells(r, now) for r in records], width=width, color=color)


def render_rows(rows: Sequence[Sequence[str]], *, width: int | None = None,
                color: bool = False) -> list[str]:
    """The header and one line per row of seven cells (`core.record_view.row_cells`, made
    here or by the coordinator), laid out as `render_jobs` says."""
    cells: list[Sequence[str]] = [HEADERS, *rows]
    name_width = max(len(c[2]) for c in cells)
    if width is not None:
        name_width = min(name_width, NAME_WIDTH)
    widths = [max(len(c[i]) for c in cells) for i in range(6)]
    widths[2] = name_width
    right = {3, 4, 5}
    lines: list[str] = []
    fixed = sum(widths) + len(_GAP) * 6
    for index, row in enumerate(cells):
        parts: list[str] = []
        for i in range(6):
            value = cut(row[i], widths[i]) if i == 2 else row[i]
            padded = value.rjust(widths[i]) if i in right else value.ljust(widths[i])
            if i == 1 and index > 0:
                padded = paint(padded, state_colour(row[1]), color)
            parts.append(padded)
        note = row[6]
        if width is not None:
            note = cut(note, width - fixed)
        lines.append((_GAP.join(parts) + _GAP + note).rstrip())
    return lines


def table_lines(chosen: list[dict[str, Any]], records: list[dict[str, Any]],
                now: float) -> list[str]:
    """The text of `qex list` on stdout: the table of the chosen jobs, then each pool's use
    over every job (not only the chosen); `no jobs` for none."""
    import sys

    from qex.core.record_view import JobView, pool_use_lines

    if not chosen:
        return ["no jobs"]
    lines = render_jobs([JobView(r) for r in chosen], now=now, width=terminal_width(sys.stdout),
                        color=use_color(sys.stdout))
    return lines + pool_use_lines(records)


def rows_table_lines(rows: Sequence[Sequence[str]], pools: list[str]) -> list[str]:
    """`table_lines` from rows and pool lines that the coordinator made (`list_table`)."""
    import sys

    if not rows:
        return ["no jobs"]
    return render_rows(rows, width=terminal_width(sys.stdout),
                       color=use_color(sys.stdout)) + pools
