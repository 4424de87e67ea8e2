"""Id files: the handle that survives the session that submitted the work.

An agent can be stopped at any moment, so `--id-file` is written atomically and fsynced
BEFORE any wait begins: whatever interrupts the wait, the id is on disk and a later session
attaches with `qex status "$(cat FILE)" --wait`. A file in a scratch or temp directory defeats
that purpose, so qex warns when it sees one.

Formats: one job -> `<id>\\n`; a group (pipeline, fan-out) -> a shell file (`group=<id>` and one
`NAME=<id>` per job, ready for `. ids.env`), or a JSON object when the name ends in `.json`.
"""

from __future__ import annotations

import os

from qex.core.names import safe_name
from qex.store import atomic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

MODE = 0o644
SCRATCH_PARTS = frozenset({"scratch", "scratchpad"})


def _absolute(path: str | os.PathLike[str]) -> str:
    return os.path.abspath(path)


def _parts(text: str) -> tuple[str, ...]:
    """The components of a path as `PurePosixPath(text).parts` gives them (its root, then
    each name; empty names and `.` dropped, `..` kept), without importing `pathlib`."""
    root: tuple[str, ...] = ()
    if text.startswith("//") and not text.startswith("///"):
        root = ("//",)
    elif text.startswith("/"):
        root = ("/",)
    return root + tuple(part for part in text.split("/") if part and part != ".")


def single_text(job_id: str) -> str:
    return f"{job_id}\n"


def shell_names(names: Sequence[str]) -> list[str]:
    """Shell variable names for jobs: non-alphanumerics become `_`, never `group`, unique."""
    import re

    not_ident = re.compile(r"[^A-Za-z0-9]")
    used = {"group"}
    out: list[str] = []
    for name in names:
        ident = not_ident.sub("_", name) or "job"
        if ident[0].isdigit():
            ident = "_" + ident
        candidate, counter = ident, 2
        while candidate in used:
            candidate = f"{ident}_{counter}"
            counter += 1
        used.add(candidate)
        out.append(candidate)
    return out


def group_text(path: str | os.PathLike[str], group: str, group_name: str,
               jobs: Sequence[tuple[str, str]]) -> str:
    """The group file for `jobs` = [(name, id), ...] in submission order."""
    if os.path.basename(os.fspath(path)).endswith(".json"):
        import json

        body = {
            "group": group,
            "group_name": safe_name(group_name),
            "jobs": {safe_name(name): job_id for name, job_id in jobs},
        }
        return json.dumps(body, indent=2) + "\n"
    lines = [f"group={group}"]
    lines.extend(f"{ident}={job_id}" for ident, (_, job_id) in
                 zip(shell_names([n for n, _ in jobs]), jobs, strict=True))
    return "\n".join(lines) + "\n"


def write(path: str | os.PathLike[str], text: str) -> None:
    """Atomic and fsynced (file and directory), so the id is on disk before any wait."""
    atomic.write_bytes(_absolute(path), text.encode("utf-8"), mode=MODE)


def write_or_warn(path: str | os.PathLike[str], text: str) -> str | None:
    """Write the id file; the sentence to print when it did not reach the disk."""
    try:
        write(path, text)
    except OSError as exc:
        return (
            f"the id file {os.fspath(path)} did not reach the disk ({exc.strerror or exc}); the "
            "job is queued all the same, so keep the id that this command prints"
        )
    return None


def write_id_file(path_text: str | None, text: str) -> None:
    """Write the id file (atomic, fsynced) and warn about scratch places; never fatal."""
    if not path_text:
        return
    from qex.cli.common import warn

    problem = write_or_warn(path_text, text)
    if problem:
        warn(problem)
        return
    note = scratch_warning(path_text)
    if note:
        warn(note)


def _roots(env: Mapping[str, str]) -> list[tuple[str, str]]:
    roots: list[tuple[str, str]] = [("/tmp", "/tmp"), ("/var/tmp", "/var/tmp")]
    for var in ("TMPDIR", "CLAUDE_JOB_DIR", "XDG_RUNTIME_DIR"):
        value = env.get(var, "")
        if value:
            roots.append((value, f"${var}"))
    return roots


def _under(path: str, root: str) -> bool:
    """`path` is `root` or inside it, name by name (as `PurePath.relative_to` decides)."""
    inner, outer = _parts(path), _parts(root)
    if not outer:  # `.` or an empty root: only a relative path lies under it
        return not inner or inner[0] not in ("/", "//")
    return inner[:len(outer)] == outer


def scratch_warning(path: str | os.PathLike[str],
                    env: Mapping[str, str] | None = None) -> str | None:
    """A warning when the id file sits where files do not outlive a session."""
    source = os.environ if env is None else env
    target = _absolute(path)
    directory = os.path.dirname(target)
    candidates = {directory, os.path.realpath(directory)}
    where: str | None = None
    for root, label in _roots(source):
        resolved = {root, os.path.realpath(root)}
        if any(_under(c, r) for c in candidates for r in resolved):
            where = label
            break
    if where is None and any(part.lower() in SCRATCH_PARTS
                             for c in candidates for part in _parts(c)):
        where = "a scratch directory"
    if where is None:
        return None
    return (
        f"the id file {target} is under {where}, a place that does not last beyond this "
        "session; keep id files in the project or the home directory, so that a later session "
        "can attach with `qex status \"$(cat FILE)\" --wait`"
    )
