"""The `[engine]` section of the config: where jobs run (this machine, or a Slurm cluster).

Pure. Kept apart from `config_parse` so that an engine's keys live in one place.
"""

from __future__ import annotations

import math
from typing import Any

from qex.core.config import EngineSection
from qex.core.config_reader import SectionReader

#: The engines qex knows. `local` is this machine's queue; `slurm` hands jobs to Slurm.
ENGINE_KINDS = ("local", "slurm")
#: The shortest interval between two looks at Slurm's queue: a controller serves many users.
MIN_POLL_SECS = 0.5


def _text(r: SectionReader, key: str) -> str | None:
    if not r.has(key):
        return None
    value = r.table[key]
    if not isinstance(value, str):
        r.fail(key, f"must be text in quotation marks, and `{r.shown(key)}` is not")
    text = value.strip()
    if "\0" in text or "\n" in text:
        r.fail(key, "holds a NUL or a line break, which Slurm cannot take; remove it")
    return text or None


def parse_engine(r: SectionReader) -> EngineSection:
    base = EngineSection()
    kind = r.choice("kind", base.kind, ENGINE_KINDS)
    poll = r.number("poll", base.poll)
    if not math.isfinite(poll) or poll < MIN_POLL_SECS:
        r.fail("poll", (
            f"is {poll:g}; qex asks Slurm at most every {MIN_POLL_SECS:g} seconds, so give "
            f"{MIN_POLL_SECS:g} or more (5 is a good value on a busy cluster)"))
    shared = _text(r, "shared_dir")
    if shared is not None and not shared.startswith("/"):
        r.fail("shared_dir", (
            f"is `{r.shown('shared_dir')}`, not an absolute path; give the directory that "
            "every node sees, such as \"/shared/home/me\""))
    python = _text(r, "python")
    if python is not None and not python.startswith("/"):
        r.fail("python", (
            f"is `{r.shown('python')}`, not an absolute path; give the interpreter that has "
            "qex installed on the nodes, such as \"/opt/qex/bin/python\""))
    return EngineSection(
        kind=kind,
        partition=_text(r, "partition"),
        account=_text(r, "account"),
        qos=_text(r, "qos"),
        sbatch_options=r.string_list("sbatch_options", base.sbatch_options, "sbatch options"),
        shared_dir=shared,
        poll=poll,
        python=python,
    )


def engine_to_dict(engine: EngineSection) -> dict[str, Any]:
    """The section as plain data that parses back to the same value."""
    data: dict[str, Any] = {
        "kind": engine.kind,
        "sbatch_options": list(engine.sbatch_options),
        "poll": int(engine.poll) if float(engine.poll).is_integer() else engine.poll,
    }
    for key in ("partition", "account", "qos", "shared_dir", "python"):
        value = getattr(engine, key)
        if value is not None:
            data[key] = value
    return data
