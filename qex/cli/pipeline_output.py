"""What `qex pipeline` prints as its stages are accepted, and at its end or its refusal.

One definition for both ways a pipeline is submitted: the full path sends each stage
itself, the lean path (`qex.cli.fastsubmit.submit_pipeline`) gets the coordinator's answers
for all of them at once. Light on purpose: no `typing`, `re` or click.
"""

from __future__ import annotations

import sys

from qex.cli.common import print_warnings, warn
from qex.core.exit_band import Exit
from qex.core.names import safe_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn


class PipelineReport:
    """The stderr line of each accepted stage (after the coordinator's warning on it), then
    the group id on stdout, or the whole submission as JSON."""

    def __init__(self, group: str) -> None:
        self.group = group
        self.done: list[tuple[str, str]] = []

    def accepted(self, stage: str, job_id: str, warning: object) -> None:
        print_warnings({"warning": warning})
        self.done.append((stage, job_id))
        warn(f"{safe_name(stage)}: {job_id}")

    def refused(self, message: str, stage: str) -> NoReturn:
        """The coordinator refused `stage`: say so, which stages are queued already, and how
        to remove them (121)."""
        warn(f"the stage `{safe_name(stage)}` was not accepted: {message}")
        if self.done:
            warn(f"the stages before it are in the queue, in the group {self.group}:")
            for name, job_id in self.done:
                warn(f"  {safe_name(name)}: {job_id}")
            warn(f"remove them with `qex cancel {self.group}`, or keep them and submit the "
                 "rest yourself")
        raise SystemExit(Exit.QEX_FAILED)

    def finish(self, group_name: str, id_file: str | None, *, as_json: bool) -> None:
        """Every stage is in: the id file, then the group id or the JSON document."""
        if id_file:
            from qex.cli.idfile import group_text, write_id_file

            write_id_file(id_file, group_text(id_file, self.group, group_name, self.done))
        if as_json:
            from qex.cli.common import print_json

            print_json({"group": self.group, "group_name": safe_name(group_name),
                        "jobs": [{"name": safe_name(n), "id": i} for n, i in self.done]})
            return
        sys.stdout.write(self.group + "\n")
        sys.stdout.flush()
