"""The fields of a job file, one by one: typed getters whose errors name the file and field.

Pure. `qex.core.jobfile` builds jobs and pipelines from these; this module knows how one
value is checked (a list of arguments, a table of variables, `[resources]` and its pool
claims) and how an unknown field is refused with the nearest known name.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any, NoReturn

from qex.core.claims import (
    ClaimError,
    ClaimRequest,
    parse_cpu_claim,
    parse_mem_claim,
    resource_name_problem,
)
from qex.core.job_fields import RESOURCE_KEYS
from qex.core.model import dataclass, field
from qex.core.names import visible
from qex.core.records import PoolClaim
from qex.core.units import UnitError, parse_count, parse_duration, parse_size


class Unset(Enum):
    """Marks a field the file did not give, where None already means "no limit"."""

    UNSET = "unset"


UNSET = Unset.UNSET

RESOURCE_FIELDS: tuple[str, ...] = RESOURCE_KEYS


class JobFileError(ValueError):
    """A job or pipeline file that qex cannot use; the message names the file and field."""


@dataclass(frozen=True)
class Resources:
    """`[resources]`: cpu and mem as given (a number or `half`/`full`), GPUs, other pools."""

    cpu: ClaimRequest | None = None
    mem: ClaimRequest | None = None
    gpu: int | None = None
    #: Bytes on each device; None = the whole device (written `0`); UNSET = not given.
    vram: int | Unset | None = UNSET
    claims: Mapping[str, PoolClaim] = field(default_factory=dict)


class Fields:
    """The fields of one table, with typed getters that fail naming the file and the field."""

    def __init__(self, source: str, where: str, table: Mapping[str, Any]) -> None:
        self.source = source
        self.where = where
        self.table = table

    def fail(self, key: str, detail: str) -> NoReturn:
        raise JobFileError(f"in the {self.where} {self.source}, `{key}` {detail}")

    def shown(self, key: str) -> str:
        return visible(str(self.table[key]))

    def text(self, key: str, *, empty_ok: bool = False) -> str | None:
        if key not in self.table:
            return None
        value = self.table[key]
        if not isinstance(value, str) or "\0" in value or (not empty_ok and not value.strip()):
            self.fail(key, "must be a non-empty text in quotation marks")
        return value

    def words(self, key: str, what: str) -> tuple[str, ...]:
        """A list of texts; one text alone is taken as a list of one."""
        if key not in self.table:
            return ()
        value = self.table[key]
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(v, str) and v.strip() for v in items):
            self.fail(key, f"must be a list of {what}, such as [\"a\", \"b\"]")
        for item in items:
            if any(ord(c) < 0x20 or ord(c) == 0x7F for c in item):
                self.fail(key, f"holds `{visible(item)}`, with a control character; remove it")
        return tuple(items)

    def whole(self, key: str, low: int | None = None, high: int | None = None) -> int | None:
        if key not in self.table:
            return None
        try:
            number = parse_count(self.table[key], what="the value")
        except UnitError as exc:
            self.fail(key, f"is wrong: {exc}")
        if (low is not None and number < low) or (high is not None and number > high):
            span = f"{low} or more" if high is None else f"from {low} to {high}"
            self.fail(key, f"is {number}, and it must be {span}")
        return number

    def duration(self, key: str) -> float | Unset | None:
        if key not in self.table:
            return UNSET
        try:
            return parse_duration(self.table[key], what="time")
        except UnitError as exc:
            self.fail(key, f"is wrong: {exc}")

    def flag(self, key: str) -> bool:
        value = self.table.get(key, False)
        if not isinstance(value, bool):
            self.fail(key, "must be true or false, with no quotation marks")
        return value


def check_fields(table: Mapping[str, Any], allowed: tuple[str, ...], source: str, where: str,
                  example: str) -> None:
    for key in table:
        if key in allowed:
            continue
        name = visible(str(key))
        if key in ("dedupe_key", "dedupe_window") and where.startswith("stage"):
            raise JobFileError(
                f"the {where} {source} gives `{name}`, and a pipeline stage "
                "takes no dedupe key: a key would answer for that stage alone, and the stages "
                "after it would wait for a job of an earlier run; remove it"
            )
        from difflib import get_close_matches  # only on a mistake: 1.5 ms
        close = get_close_matches(str(key), allowed, n=1, cutoff=0.6)
        hint = f"did you mean `{close[0]}`?" if close else f"the fields are {', '.join(allowed)};"
        raise JobFileError(
            f"the {where} {source} has a field `{name}` that qex does not know; {hint} "
            f"qex refuses unknown fields so that none is silently ignored (for example: {example})"
        )


def parse_resources(fields: Fields) -> Resources:
    raw = fields.table.get("resources")
    if raw is None:
        return Resources()
    if not isinstance(raw, dict):
        fields.fail("resources", (
            "must be a table, written [resources] with cpu, mem, gpu, vram "
            "or claims under it"
        ))
    check_fields(raw, RESOURCE_FIELDS, fields.source, f"[resources] of the {fields.where}",
                  '[resources] with cpu = 2, mem = "4GB", gpu = 1, vram = "20GB"')
    res = Fields(fields.source, fields.where, raw)
    try:
        cpu = parse_cpu_claim(raw["cpu"], what="[resources] cpu") if "cpu" in raw else None
        mem = parse_mem_claim(raw["mem"], what="[resources] mem") if "mem" in raw else None
    except ClaimError as exc:
        raise JobFileError(f"in the {fields.where} {fields.source}, {exc}") from None
    gpu = res.whole("gpu", low=0)
    vram: int | Unset | None = UNSET
    if "vram" in raw:
        try:
            vram = parse_size(raw["vram"], what="vram") or None
        except UnitError as exc:
            res.fail("vram", f"is wrong: {exc}")
    claims: dict[str, PoolClaim] = {}
    table = raw.get("claims", {})
    if not isinstance(table, dict):
        res.fail("claims", "must be a table, written [resources.claims] with NAME = N under it")
    for name, value in table.items():
        claims[str(name)] = _pool_claim(str(name), value, fields)
    if "gpu" in claims and (gpu is not None or vram is not UNSET):
        res.fail("claims", (
            "claims `gpu` and [resources] also gives gpu or vram; give the GPU "
            "claim once"
        ))
    return Resources(cpu=cpu, mem=mem, gpu=gpu, vram=vram, claims=claims)


def _pool_claim(name: str, value: Any, fields: Fields) -> PoolClaim:
    label = f"[resources.claims] {visible(name)}"
    problem = resource_name_problem(name, what="the pool name")
    if problem is not None:
        raise JobFileError(f"in the {fields.where} {fields.source}, {problem}")
    count_value: Any = value
    size: int | None = None
    if isinstance(value, dict):
        extra = [k for k in value if k not in ("count", "size")]
        if extra or "count" not in value:
            fields.fail(label, "must be a number, or a table with `count` and an optional `size`, "
                        "such as { count = 2, size = \"8GB\" }")
        count_value = value["count"]
        if "size" in value:
            try:
                size = parse_size(value["size"], what="size") or None
            except UnitError as exc:
                fields.fail(label, f"is wrong: {exc}")
    try:
        count = parse_count(count_value, what="the count")
    except UnitError as exc:
        fields.fail(label, f"is wrong: {exc}")
    if count < 1:
        fields.fail(label, (
            f"claims {count} units; a claim is 1 unit or more, so raise it or "
            "remove the line"
        ))
    return PoolClaim(count=count, size=size)


def parse_env(fields: Fields) -> dict[str, str]:
    raw = fields.table.get("env")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        fields.fail("env", "must be a table of NAME = \"value\", written [env] in TOML")
    env: dict[str, str] = {}
    for key, value in raw.items():
        name = str(key)
        if not name or "=" in name or "\0" in name:
            fields.fail("env", f"holds the name `{visible(name)}`, which no variable can have")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            fields.fail(f"env.{visible(name)}", "must be a text (put the value in quotation marks)")
        text = str(value)
        if "\0" in text:
            fields.fail(f"env.{visible(name)}", (
                "holds a NUL character, which no program can "
                "receive"
            ))
        env[name] = text
    return env


def parse_command(fields: Fields) -> tuple[str, ...] | None:
    if "command" not in fields.table:
        return None
    value = fields.table["command"]
    if isinstance(value, str):
        fields.fail(
            "command",
            "is one text, and qex starts no shell to split it; give a list of arguments, such "
            "as command = [\"make\", \"test\"], or name the shell: [\"bash\", \"-lc\", \"a | b\"]",
        )
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        fields.fail("command", "must be a non-empty list of texts, such as [\"make\", \"test\"]")
    if not value[0]:
        fields.fail("command", "starts with an empty program name; put the program first")
    if any("\0" in v for v in value):
        fields.fail("command", "holds a NUL character, which no program can receive")
    return tuple(value)
