"""What `qex schema NAME` prints, without click: the JSON Schema of one of qex's formats.

A program that reads `qex status --json` runs it to validate what it reads, so the fast
path (`qex.cli.fast`) and the click command both call `show_schema`.
"""

from __future__ import annotations

import sys


def show_schema(name: str | None) -> int:
    """Print the schema called `name` (any case, spaces around it ignored); exit 2, with the
    names there are, for no name or an unknown one."""
    from qex.cli.common import die
    from qex.core.names import visible
    from qex.core.schemas import SCHEMAS, render

    names = ", ".join(SCHEMAS)
    if name is None:
        die(f"name the format whose schema you want, one of: {names} (e.g. `qex schema status`)", 2)
    key = name.strip().lower()
    if key not in SCHEMAS:
        die(f"there is no schema called `{visible(name)}`; give one of: {names}", 2)
    sys.stdout.write(render(key) + "\n")
    return 0
