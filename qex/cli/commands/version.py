"""`qex version`: this build, the coordinator that runs (if any), and what each can obey.

A new build can replace the program while an older coordinator still runs; this command is
where a person sees that difference and the options the running coordinator cannot obey.
It never starts a coordinator.
"""

from __future__ import annotations

from typing import Any

import click

from qex.cli.common import get_paths, print_json, warn


@click.command("version")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as one JSON object.")
def command(*, as_json: bool) -> None:
    """Show the version of this qex and what it can do, and the version, pid and abilities
    of the coordinator that runs now, with what it cannot do."""
    from qex import __version__
    from qex.cli.reach import open_connection
    from qex.core import protocol
    from qex.core.capability_check import floor_refusal, version_warning
    from qex.core.names import printable_line

    mine = list(protocol.CAPABILITIES)
    paths = get_paths()
    conn = open_connection(paths, start=False)
    coordinator: dict[str, Any] = {"running": False}
    notes: list[str] = []
    if conn is not None:
        with conn:
            info = conn.fresh_info()
            answer = conn.capabilities_answer()
        names = answer.get("names") if answer is not None else None
        theirs = [str(n) for n in names] if isinstance(names, list) else []
        version = str(info.get("version") or "unknown")
        coordinator = {
            "running": True,
            "version": version,
            "pid": info.get("pid"),
            "program_replaced": bool(info.get("program_replaced")),
            "matches": version == __version__,
            "capabilities": theirs,
            "cannot_do": [name for name in mine if name not in theirs],
        }
        for note in (floor_refusal(info), version_warning(info, __version__)):
            if note:
                notes.append(note)
    if as_json:
        print_json({"version": __version__, "capabilities": mine, "coordinator": coordinator})
        return
    click.echo(f"qex {__version__}")
    click.echo(f"can do: {', '.join(mine)}")
    if not coordinator["running"]:
        click.echo("coordinator: none operates (the next command that needs one starts it)")
        return
    shown = printable_line(str(coordinator["version"]))
    click.echo(f"coordinator: {shown} (pid {coordinator['pid']})")
    if coordinator["cannot_do"]:
        click.echo(f"coordinator cannot do: {', '.join(coordinator['cannot_do'])}")
    extra = [n for n in coordinator["capabilities"] if n not in mine]
    if extra:
        click.echo(f"coordinator can also do: {', '.join(printable_line(n) for n in extra)}")
    for note in notes:
        warn(f"WARNING: {note}")
