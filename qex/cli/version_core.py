"""`qex version` and `qex --version` without click, shared by the fast path and the click
command.

Tools and agents ask for the version to learn what they talk to, often once per session and
sometimes once per call; the answer should cost what a read costs. The body asks the
coordinator for its `info` and its capabilities on one connection (`qex.cli.wire`) and
prints what the click command printed before it used this module. Nobody listening, or an
answer that is not plain, goes to the click command (which never starts a coordinator
either), with nothing changed.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def version_flag() -> int:
    """`qex --version`: this program's name and version, one line."""
    from qex import __version__

    sys.stdout.write(f"qex {__version__}\n")
    sys.stdout.flush()
    return 0


def coordinator_report(info: dict[str, Any] | None, capabilities: dict[str, Any] | None
                       ) -> tuple[dict[str, Any], list[str]]:
    """The `coordinator` part of the answer and the notes about it, from its `info` answer
    and its `capabilities` answer (None: it could not give one). `info` None: none runs."""
    from qex import __version__
    from qex.core import protocol
    from qex.core.coordinator_notes import floor_refusal, version_warning

    if info is None:
        return {"running": False}, []
    mine = list(protocol.CAPABILITIES)
    names = capabilities.get("names") if capabilities is not None else None
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
    notes = [note for note in (floor_refusal(info), version_warning(info, __version__)) if note]
    return coordinator, notes


def show(coordinator: dict[str, Any], notes: list[str], as_json: bool) -> None:
    """Print this program's version and abilities, then the coordinator's and the notes."""
    from qex import __version__
    from qex.cli.common import print_json, warn
    from qex.core import protocol

    mine = list(protocol.CAPABILITIES)
    if as_json:
        print_json({"version": __version__, "capabilities": mine, "coordinator": coordinator})
        return
    lines = [f"qex {__version__}", f"can do: {', '.join(mine)}"]
    if not coordinator["running"]:
        lines.append("coordinator: none operates (the next command that needs one starts it)")
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()
        return
    from qex.core.names import printable_line

    lines.append(f"coordinator: {printable_line(str(coordinator['version']))} "
                 f"(pid {coordinator['pid']})")
    if coordinator["cannot_do"]:
        lines.append(f"coordinator cannot do: {', '.join(coordinator['cannot_do'])}")
    extra = [n for n in coordinator["capabilities"] if n not in mine]
    if extra:
        lines.append(f"coordinator can also do: {', '.join(printable_line(n) for n in extra)}")
    sys.stdout.write("\n".join(lines) + "\n")
    for note in notes:
        warn(f"WARNING: {note}")
    sys.stdout.flush()


def lean(as_json: bool) -> int | None:
    """0 once printed; None (nothing asked that changes anything) for the click command:
    nobody listens, or an answer was slow or not the plain one."""
    from qex.cli.fastread import ask
    from qex.cli.wire import Wire
    from qex.core import protocol

    wire = Wire.connect()
    if wire is None:
        return None
    try:
        info = ask(wire, protocol.info())
        if info is None or info.get("result") != protocol.Result.INFO:
            return None
        capabilities = ask(wire, protocol.capabilities())
        if capabilities is None:
            return None
    finally:
        wire.close()
    plain = capabilities if capabilities.get("result") == protocol.Result.CAPABILITIES else None
    coordinator, notes = coordinator_report(info, plain)
    show(coordinator, notes, as_json)
    return 0
