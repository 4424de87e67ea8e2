"""The page of `qex top`: a header about the queue, then the jobs with their live use.

Pure: the caller passes the records, the coordinator's `info` (or None), the pauses and the
live samples. Running jobs come first, then the queue in submission order, then the last
finished jobs, so the page answers "what runs, what waits, what just ended".
"""

from __future__ import annotations

import time
from typing import Any

from qex.cli.queue_lines import clock, health_line, others_line, pause_lines
from qex.cli.render_table import cut, paint, state_colour
from qex.core.model import dataclass
from qex.core.names import safe_name, short_id
from qex.core.record_json import sort_key
from qex.core.record_view import JobView, note_text, time_text
from qex.core.units import format_size

#: Finished jobs shown below the running and queued ones.
RECENT_FINISHED = 12
HEADERS = ("ID", "STATE", "NAME", "CLAIM", "CPU", "MEM CLAIM/RSS", "TIME", "NOTE")


@dataclass(frozen=True)
class Live:
    """What was measured for one running job."""

    cores: float | None
    rss: int | None


def order(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ordered = sorted(records, key=sort_key)
    active = [r for r in ordered if r.get("state") in ("starting", "running")]
    queued = [r for r in ordered if r.get("state") == "queued"]
    finished = [r for r in ordered if r.get("state") not in ("starting", "running", "queued")]
    finished.sort(key=lambda r: r.get("finished_at") or 0)
    return active + queued + finished[-RECENT_FINISHED:][::-1]


@dataclass(frozen=True)
class DiskBudget:
    """The budget as the config file gives it, for a page without a coordinator."""

    cpu: int
    mem: int


def disk_budget_line(budget: DiskBudget | str, records: list[dict[str, Any]]) -> str:
    """`cores: 1 of 2 claimed · memory: ...`, counted from the active records on disk; a
    text is a config fault to show in its place."""
    if isinstance(budget, str):
        return f"budget: unknown; {budget}"
    active = [r for r in records if r.get("state") in ("starting", "running")]
    cores = sum(r["cpu"] for r in active if isinstance(r.get("cpu"), int))
    mem = sum(r["mem"] for r in active if isinstance(r.get("mem"), int))
    return (f"cores: {cores} of {budget.cpu} claimed · memory: {format_size(mem)} of "
            f"{format_size(budget.mem)} claimed (the budget of the config file)")


def header(info: dict[str, Any] | None, pauses: dict[str, Any] | None, now: float,
           *, note: str | None = None, budget: str | None = None,
           extra: tuple[str, ...] = ()) -> list[str]:
    if info is None:
        lines = [f"qex top  {clock(now)}  no coordinator answers; the jobs below come from disk"]
        if budget:
            lines.append(budget)
    else:
        lines = [f"qex top  {clock(now)}  coordinator pid {info.get('pid')} "
                 f"(version {safe_name(str(info.get('version') or '?'))})"]
        mem_claimed = info.get("mem_claimed")
        mem_budget = info.get("mem_budget")
        mem = (f"{format_size(mem_claimed)} of {format_size(mem_budget)}"
               if isinstance(mem_claimed, int) and isinstance(mem_budget, int) else "unknown")
        lines.append(f"cores: {info.get('cpu_claimed', '?')} of {info.get('cpu_budget', '?')} "
                     f"claimed · memory: {mem} claimed · {others_line(info)}")
        lines.append(health_line(info, now))
        # The health line already holds the queue's pause; only the locks remain.
        pauses = {"queue": None, "locks": (pauses or {}).get("locks") or []}
    lines += pause_lines(pauses, now)
    lines += extra  # each pool's use, the live use of each GPU
    if note:
        lines.append(note)
    return lines


def _row(raw: dict[str, Any], live: Live | None, now: float) -> tuple[str, ...]:
    record = JobView(raw)
    claim = format_size(record.mem) if record.mem > 0 else "-"
    rss = format_size(live.rss) if live is not None and live.rss is not None else "-"
    cores = f"{live.cores:.2f}" if live is not None and live.cores is not None else "-"
    active = record.active
    return (
        short_id(record.id),
        record.state,
        safe_name(record.name or "job"),
        str(record.cpu),
        cores if active else "",
        f"{claim} / {rss}" if active else claim,
        time_text(record, now),
        note_text(record),
    )


def table(records: list[dict[str, Any]], live: dict[str, Live], now: float, *,
          width: int | None, color: bool) -> list[str]:
    rows = [_row(r, live.get(str(r.get("id"))), now) for r in order(records)]
    cells = [HEADERS, *rows]
    widths = [max(len(c[i]) for c in cells) for i in range(7)]
    widths[2] = min(widths[2], 16)
    right = {3, 4, 5, 6}
    fixed = sum(widths) + 2 * 7
    lines: list[str] = []
    for index, row in enumerate(cells):
        parts: list[str] = []
        for i in range(7):
            value = cut(row[i], widths[i])
            padded = value.rjust(widths[i]) if i in right else value.ljust(widths[i])
            if i == 1 and index > 0:
                padded = paint(padded, state_colour(row[1]), color)
            parts.append(padded)
        note = row[7] if width is None else cut(row[7], width - fixed)
        lines.append(("  ".join(parts) + "  " + note).rstrip())
    if not rows:
        lines.append("no jobs")
    return lines


def page(records: list[dict[str, Any]], live: dict[str, Live], info: dict[str, Any] | None,
         pauses: dict[str, Any] | None, *, now: float | None = None, width: int | None = None,
         color: bool = False, note: str | None = None,
         budget: DiskBudget | str | None = None,
         extra: tuple[str, ...] = ()) -> list[str]:
    """The whole page; `budget` stands in for the coordinator's figures when it has none;
    `extra` lines (each pool's use, each GPU's live use) follow the header."""
    when = time.time() if now is None else now
    budget_line = disk_budget_line(budget, records) if budget is not None else None
    lines = header(info, pauses, when, note=note, budget=budget_line, extra=extra)
    if width is not None:
        lines = [cut(line, width) for line in lines]
    return [*lines, "", *table(records, live, when, width=width, color=color)]
