"""`qex top`: the jobs, their claims and what they really use now, refreshed in place.

It never starts a coordinator: with none running, it reads the records from disk. `--once`
prints one page for scripts: two samples a moment apart when jobs run (so the CPU column has
a value), at once when none does.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from qex.cli.common import get_paths
from qex.core.model import dataclass, field
from qex.core.states import Exit

#: The gap between the two samples of `--once`.
ONCE_GAP = 0.4


@dataclass
class _Feed:
    """Where the page's data comes from, and what went wrong on the way."""

    paths: Any
    conn: Any = None
    timed_out: bool = False
    samples: dict[int, Any] = field(default_factory=dict)
    #: The config's budget (or why it is unknown), read once when a page comes from disk.
    budget: Any = None

    def disk_budget(self) -> Any:
        """The budget of the config file for this machine; a sentence when it is unusable."""
        if self.budget is None:
            from qex.cli.top_page import DiskBudget
            from qex.core.config import ConfigError
            from qex.platform.machine import machine
            from qex.store.config_file import load_config

            try:
                config = load_config(self.paths)
            except ConfigError as exc:
                self.budget = str(exc)
            else:
                here = machine()
                self.budget = DiskBudget(cpu=config.cpu_budget(here), mem=config.mem_budget(here))
        return self.budget

    def fetch(self) -> tuple[list[dict[str, Any]], dict[str, Any] | None, dict[str, Any] | None]:
        """(records, info or None, pauses or None); a coordinator that fails falls back to disk."""
        from qex.cli.queue_lines import pause_state_from_info
        from qex.client.connection import CoordinatorError, Refused, connect

        try:
            if self.conn is None:
                self.conn = connect(self.paths, start=False)
            if self.conn is not None:
                jobs = self.conn.list_jobs()
                info = self.conn.fresh_info()
                return jobs, info, pause_state_from_info(info)
        except Refused:
            pass
        except CoordinatorError as exc:
            self.timed_out = self.timed_out or exc.timeout
            if self.conn is not None:
                self.conn.close()
            self.conn = None
        return self._from_disk()

    def _from_disk(self) -> tuple[list[dict[str, Any]], None, dict[str, Any]]:
        from qex.cli.commands.pause import disk_pause_state
        from qex.cli.resolve import disk_records
        from qex.cli.stale import settle

        records, _stale = settle(self.paths, disk_records(self.paths))
        return records, None, disk_pause_state(self.paths, time.time())

    def measure(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """Sample every running job's group; the live view uses the previous sample too."""
        from qex.cli.live_usage import cores_in_use, sample_groups
        from qex.cli.top_page import Live

        pgids = {int(r["pid"]) for r in records
                 if r.get("state") in ("starting", "running") and isinstance(r.get("pid"), int)}
        try:
            fresh = sample_groups(pgids)
        except Exception:  # psutil missing or refused: the page still shows the claims
            fresh = {}
        live: dict[str, Any] = {}
        for record in records:
            pid = record.get("pid")
            if not isinstance(pid, int) or pid not in fresh:
                continue
            now_sample = fresh[pid]
            live[str(record.get("id"))] = Live(
                cores=cores_in_use(self.samples.get(pid), now_sample), rss=now_sample.rss)
        self.samples = fresh
        return live


def _render(feed: _Feed, *, width: int | None, color: bool) -> list[str]:
    from qex.cli.top_page import page

    records, info, pauses = feed.fetch()
    live = feed.measure(records)
    note = None
    if feed.timed_out and info is None:
        note = "the coordinator did not answer in time, so this page comes from disk"
    budget = feed.disk_budget() if info is None else None
    from qex.cli.info_core import local_gpu_lines, pool_lines

    extra = tuple(pool_lines(info.get("pools") if info else None) + local_gpu_lines())
    return page(records, live, info, pauses, width=width, color=color, note=note, budget=budget,
                extra=extra)


def _once(feed: _Feed, color: bool) -> None:
    records, _info, _pauses = feed.fetch()
    feed.measure(records)
    if feed.samples:
        # A job's cores are the growth of its CPU time between two samples. With no job
        # sampled (none runs, or psutil is missing) the wait would buy no column: skip it.
        time.sleep(ONCE_GAP)
    click.echo("\n".join(_render(feed, width=None, color=color)))


def _live(feed: _Feed, interval: float, color: bool) -> None:
    """Redraw in place until `q` or Ctrl-C; keys are read without Enter when stdin is a tty."""
    import os
    import select
    import shutil

    keyboard = sys.stdin.isatty()
    saved = None
    if keyboard:
        import termios
        import tty

        saved = termios.tcgetattr(sys.stdin.fileno())
        tty.setcbreak(sys.stdin.fileno())
    sys.stdout.write("\x1b[?25l")
    try:
        records, _i, _p = feed.fetch()
        feed.measure(records)
        while True:
            size = shutil.get_terminal_size((100, 24))
            lines = _render(feed, width=size.columns, color=color)[: max(1, size.lines - 1)]
            sys.stdout.write("\x1b[H\x1b[2J" + "\n".join(lines) + "\n")
            sys.stdout.write("q: quit")
            sys.stdout.flush()
            if keyboard:
                ready, _w, _x = select.select([sys.stdin], [], [], interval)
                if ready and os.read(sys.stdin.fileno(), 16).lower().startswith(b"q"):
                    break
            else:
                time.sleep(interval)
    except KeyboardInterrupt:
        pass
    finally:
        sys.stdout.write("\x1b[?25h\n")
        sys.stdout.flush()
        if saved is not None:
            import termios

            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, saved)


@click.command("top")
@click.option("--once", is_flag=True, help="Print one page and exit (for scripts).")
@click.option("-i", "--interval", type=click.FloatRange(min=0.2), default=2.0, show_default=True,
              metavar="SECS", help="Seconds between two refreshes.")
@click.option("--no-color", is_flag=True, help="No colour, even on a terminal.")
def command(*, once: bool, interval: float, no_color: bool) -> None:
    """Watch the jobs: what runs (with the cores and memory it really uses now against its
    claim), what waits and why, and what ended last. Compare CPU with CLAIM to find a
    claim much larger than the need. Never starts a coordinator."""
    from qex.cli.render_table import use_color

    feed = _Feed(paths=get_paths())
    color = use_color(sys.stdout, disabled=no_color)
    try:
        if once:
            _once(feed, color)
        elif sys.stdout.isatty():
            _live(feed, interval, color)
        else:
            # Not a terminal: print a page per refresh, one after the other (like `top -b`).
            while True:
                click.echo("\n".join(_render(feed, width=None, color=False)) + "\n")
                time.sleep(interval)
    except KeyboardInterrupt:
        pass
    finally:
        if feed.conn is not None:
            feed.conn.close()
    sys.exit(Exit.WAIT_TIMEOUT if feed.timed_out else Exit.OK)
