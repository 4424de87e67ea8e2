"""What `submit --each-line` prints as its jobs are accepted, and at its end or its fault.

One definition for both ways a fan-out is submitted: the full path sends each job itself,
the lean path (`qex.cli.fastsubmit.submit_lines`) gets the coordinator's answers for all of
them at once. Light on purpose: no `typing`, `re` or click.
"""

from __future__ import annotations

import sys

from qex.cli.common import print_warnings, warn
from qex.core.names import safe_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn


class FanoutReport:
    """The stderr lines of one fan-out: each accepted job's name and id, each distinct
    warning once (counted after), then the group id on stdout, which only a fan-out that was
    submitted in full prints."""

    def __init__(self, group: str, total: int) -> None:
        self.group = group
        self.total = total
        self.done: list[tuple[str, str]] = []
        self._warnings: dict[str, int] = {}

    def accepted(self, name: str, job_id: str, warning: object) -> None:
        if isinstance(warning, str) and warning.strip():
            if warning not in self._warnings:
                print_warnings({"warning": warning})
            self._warnings[warning] = self._warnings.get(warning, 0) + 1
        self.done.append((name, job_id))
        warn(f"{safe_name(name)}: {job_id}")

    def abort(self, message: str, code: int) -> NoReturn:
        """The coordinator refused a job, or went away: say which jobs are queued already,
        and how to remove them."""
        warn(message)
        if self.done:
            warn(f"the fan-out stopped after {len(self.done)} of {self.total} jobs; those jobs "
                 f"are in the queue, in the group {self.group}:")
            for name, job_id in self.done:
                warn(f"  {safe_name(name)}: {job_id}")
            warn(f"remove them with `qex cancel {self.group}` (queued jobs) or `qex kill "
                 f"{self.group}`, or submit the missing lines alone")
        raise SystemExit(code)

    def finish(self, group_name: str, id_file: str | None) -> None:
        """Every job is in: the repeated warnings' counts, the id file, the group id."""
        for count in self._warnings.values():
            if count > 1:
                warn(f"the same warning applies to {count - 1} more job(s) of this fan-out")
        if id_file:
            from qex.cli.idfile import group_text, write_id_file

            write_id_file(id_file, group_text(id_file, self.group, group_name, self.done))
        warn(f"{len(self.done)} jobs in the group `{safe_name(group_name)}`")
        sys.stdout.write(self.group + "\n")
        sys.stdout.flush()
