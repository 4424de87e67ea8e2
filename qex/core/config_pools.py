"""`[[pool]]` entries of `qex.toml`: counted pools and pools of devices.

Pure. A pool gives `count` units or a list of `devices` (a capacity each), never both; its
name may not be `cpu` or `mem` (those are the budget), and no two pools may share the prefix
of their variables (`QEX_<NAME>_...`), since the job would then hear one pool for another.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from qex.core.claims import resource_name_problem
from qex.core.config import ConfigError, Pool
from qex.core.config_reader import SectionReader
from qex.core.names import visible
from qex.core.units import UnitError, parse_size

POOL_KEYS = ("name", "count", "devices", "size", "env")

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SIZE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,31}$")


def parse_pools(data: Mapping[str, Any], source: str) -> tuple[Pool, ...]:
    if "pool" not in data:
        return ()
    raw = data["pool"]
    if isinstance(raw, dict):
        raise ConfigError(
            f"in the config file {source}, `pool` is a single table; declare each pool as "
            "[[pool]] with two brackets, so that several pools can follow"
        )
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        raise ConfigError(
            f"in the config file {source}, `pool` must be a list of [[pool]] tables, each with "
            "a name and a count or devices"
        )
    pools: list[Pool] = []
    seen: dict[str, str] = {}
    for position, table in enumerate(raw, start=1):
        pool = _pool(table, source, position)
        word = re.sub(r"[^A-Za-z0-9_]", "_", pool.name).upper()
        if word in seen:
            other = seen[word]
            same = "twice" if other == pool.name else (
                f"as `{other}` and `{pool.name}`, which "
                f"share the variable prefix QEX_{word}_"
            )
            raise ConfigError(
                f"the config file {source} declares the pool `{pool.name}` {same}; give each "
                "[[pool]] a name of its own"
            )
        seen[word] = pool.name
        pools.append(pool)
    return tuple(pools)


def _pool(table: Mapping[str, Any], source: str, position: int) -> Pool:  # noqa: C901 (one check per key of a [[pool]])
    for key in table:
        if key not in POOL_KEYS:
            from difflib import get_close_matches  # only on a mistake: 1.5 ms
            close = get_close_matches(str(key), POOL_KEYS, n=1, cutoff=0.6)
            hint = f"did you mean `{close[0]}`?" if close else (
                f"the keys of a pool are "
                f"{', '.join(POOL_KEYS)};"
            )
            raise ConfigError(
                f"the config file {source} has a key `{visible(str(key))}` in [[pool]] number "
                f"{position} that qex does not know; {hint} correct or delete it"
            )
    name = table.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(
            f"in the config file {source}, [[pool]] number {position} has no name; give it "
            "one, such as name = \"gpu\""
        )
    name = name.strip()
    problem = resource_name_problem(name, what="the pool name")
    if problem is not None:
        raise ConfigError(f"in the config file {source}, {problem}")
    reader = SectionReader(source, name, table, pool=True)
    has_count, has_devices = "count" in table, "devices" in table
    if has_count == has_devices:
        raise ConfigError(
            f"in the config file {source}, the pool `{name}` must give exactly one of `count` "
            "(a number of units) or `devices` (a list of capacities, one per device); "
            "use devices when qex must say WHICH device a job gets"
        )
    size_name: str | None = None
    env: str | None = None
    if "size" in table:
        size_value = table["size"]
        if not isinstance(size_value, str) or not _SIZE_NAME.match(size_value):
            reader.fail("size", "must name the quantity each device holds, a word such as \"vram\"")
        size_name = size_value
    if "env" in table:
        env_value = table["env"]
        if not isinstance(env_value, str) or not _ENV_NAME.match(env_value):
            reader.fail("env", (
                "must be the name of an environment variable, such as "
                "\"CUDA_VISIBLE_DEVICES\""
            ))
        env = env_value
    if has_count:
        if size_name is not None or env is not None:
            reader.fail(
                "size" if size_name is not None else "env",
                "applies to a pool with devices only, and this pool gives a count; "
                "remove it, or list the devices instead of a count",
            )
        count = reader.count("count", 0, low=1)
        return Pool(name=name, count=count)
    devices = table["devices"]
    if not isinstance(devices, list) or not devices:
        reader.fail("devices", (
            "must be a list with one capacity for each device, such as "
            "[\"24GB\", \"24GB\"]"
        ))
    capacities: list[int] = []
    for index, value in enumerate(devices):
        try:
            capacity = parse_size(value, what=f"capacity of device {index}")
        except UnitError as exc:
            reader.fail("devices", f"is wrong: {exc}")
        if capacity < 1:
            reader.fail("devices", (
                f"gives device {index} a capacity of 0; give each device its "
                "real capacity, such as \"24GB\""
            ))
        capacities.append(capacity)
    return Pool(name=name, devices=tuple(capacities), size=size_name, env=env)
