"""`qex version`: this build, the coordinator that runs (if any), and what each can obey.

A new build can replace the program while an older coordinator still runs; this command is
where a person sees that difference and the options the running coordinator cannot obey.
It never starts a coordinator. The fast path prints the same through `qex.cli.version_core`
when the coordinator answers at once; this body covers the rest.
"""

from __future__ import annotations

import click

from qex.cli.common import get_paths


@click.command("version")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as one JSON object.")
def command(*, as_json: bool) -> None:
    """Show the version of this qex and what it can do, and the version, pid and abilities
    of the coordinator that runs now, with what it cannot do."""
    from qex.cli.reach import open_connection
    from qex.cli.version_core import coordinator_report, show

    conn = open_connection(get_paths(), start=False)
    info = capabilities = None
    if conn is not None:
        with conn:
            info = conn.fresh_info()
            capabilities = conn.capabilities_answer()
    coordinator, notes = coordinator_report(info, capabilities)
    show(coordinator, notes, as_json)
