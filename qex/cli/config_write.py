"""`qex config init` and `qex config set`: write the config file, checked first.

Both build the whole file as data, run it through the same strict parser that the
coordinator uses (`parse_config`), and only then write it, atomically, with tomli-w. A file
that would not load is never written. tomli-w writes data, not text: the comments and the
layout of a hand-edited file are not kept, so `set` saves the old file beside the new one
(`qex.toml.bak`) whenever it held a comment.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from qex.core.config import ConfigError
from qex.store.paths import Paths

#: A value of `config set` that is not TOML on its own is taken as a string (`80%`, `hard`).
_SECTION_HELP = "`qex config show --json` lists every section and key"


class WriteError(ValueError):
    """The file cannot be written as asked; the message says why and what to do."""


def check(data: dict[str, Any], path: Path) -> None:
    """Raise WriteError when `data` is not a config qex would load."""
    from qex.core.config_parse import parse_config
    from qex.core.names import visible

    try:
        parse_config(data, visible(str(path)))
    except ConfigError as exc:
        raise WriteError(str(exc)) from None


def render(data: dict[str, Any]) -> str:
    import tomli_w

    return tomli_w.dumps(data)


def write(path: Path, data: dict[str, Any]) -> None:
    from qex.store.atomic import write_bytes

    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(path, render(data).encode(), mode=0o644)


def read_existing(path: Path) -> tuple[dict[str, Any], str | None]:
    """The parsed file and its text; ({}, None) when there is none."""
    from qex.core.names import visible
    from qex.store.config_file import CONTENT, MISSING, config_from_look, look_at

    look = look_at(path)
    if look.kind == MISSING:
        return {}, None
    if look.kind != CONTENT:
        try:
            config_from_look(look, path)
        except ConfigError as exc:
            raise WriteError(str(exc)) from None
    text = look.data.decode("utf-8", "replace")
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        raise WriteError(
            f"the config file {visible(str(path))} is not valid TOML ({exc}); correct it by "
            "hand first (`qex config show` tests it), since `config set` rewrites the whole file"
        ) from None


def has_comments(text: str) -> bool:
    return any(line.lstrip().startswith("#") for line in text.splitlines())


def parse_value(text: str) -> Any:
    """A TOML value (`4`, `true`, `"80%"`, `["a", "b"]`), else the text as a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def set_key(data: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A copy of `data` with `section.key` (or a top-level key) set to `value`."""
    import copy

    parts = key.split(".")
    if any(not part for part in parts) or len(parts) > 2:
        raise WriteError(f"`{key}` is not a key; give SECTION.KEY, such as budget.cpu "
                         f"({_SECTION_HELP})")
    if parts[0] == "pool":
        raise WriteError("[[pool]] entries are a list, so `config set` cannot address them; "
                         "append the output of `qex pool suggest` to the file, or edit it")
    result = copy.deepcopy(data)
    if len(parts) == 1:
        result[parts[0]] = value
        return result
    section = result.setdefault(parts[0], {})
    if not isinstance(section, dict):
        raise WriteError(f"`{parts[0]}` in the config file is not a section; fix it by hand")
    section[parts[1]] = value
    return result


def starter(paths: Paths, *, sys_root: Path = Path("/sys")) -> tuple[dict[str, Any], list[str]]:
    """A config for this machine, and notes on what was found: all its cores, 80% of its
    memory, memory limits where they can work, and a pool for each vendor's GPUs."""
    from qex.core.units import format_size
    from qex.platform.detect import detect
    from qex.platform.machine import machine

    here = machine()
    notes = [f"this machine has {here.cores} core(s) and {format_size(here.mem_total)} of "
             "memory; the budget gives jobs all the cores and 80% of the memory"]
    data: dict[str, Any] = {
        "budget": {"cpu": here.cores, "mem": "80%"},
    }
    caps = detect()
    if caps.enforcement_possible:
        data["enforce"] = {"mode": "hard"}
        notes.append(f'memory limits work here ({caps.scope_backend}): [enforce] mode = "hard"')
    else:
        data["enforce"] = {"mode": "off"}
        notes.append(f"memory limits cannot work here ({caps.reason}), so [enforce] mode is off")
    pools = gpu_pools(sys_root)
    if pools:
        data["pool"] = pools
        notes.append(f"{len(pools)} GPU pool(s): " + ", ".join(
            f"{p['name']} with {len(p['devices'])} device(s)" for p in pools))
    else:
        notes.append("no GPU found, so no [[pool]]")
    return data, notes


def gpu_pools(sys_root: Path) -> list[dict[str, Any]]:
    """[[pool]] entries for the GPUs that discovery finds with a known VRAM."""
    from qex.core.units import format_size
    from qex.platform.devices import DiscoveryError, discover, group_by_vendor

    try:
        devices, _ = discover("auto", sys_root)
    except DiscoveryError:
        return []
    groups, _ = group_by_vendor(devices)
    several = len(groups) > 1
    pools: list[dict[str, Any]] = []
    for vendor, cards in groups.items():
        if any(card.vram is None for card in cards):
            continue  # a guessed capacity would be wrong in silence; `pool suggest` explains
        pools.append({
            "name": f"gpu-{vendor}" if several else "gpu",
            "size": "vram",
            "devices": [format_size(card.vram or 0) for card in cards],
            "env": cards[0].env,
        })
    return pools


def exists(path: Path) -> bool:
    return os.path.lexists(path)
