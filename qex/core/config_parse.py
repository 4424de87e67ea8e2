"""Turn the parsed TOML of `qex.toml` into a `Config`, and a `Config` back into a dict.

Pure: the caller reads the file (`qex.store.config_file`) and passes the dict and a name for
it. Every section and key of the config page is checked here, eagerly, so a fault is found
when the file is read and not when a job happens to need the value hours later.

Rules that apply to every key:
- a number, a size, a time or a percentage may be written with or without quotation marks
  (`cpu = 2` and `cpu = "2"` are the same); the marks never widen what a key accepts;
- sizes are bytes (1024 steps), times are seconds, `0`/`none`/`never`/`unlimited` mean
  "no limit" where a key has a limit;
- an unknown section or key is an error that names it and suggests the nearest known
  name, because a misspelt key that is silently ignored looks exactly like a setting that
  works. A key that belongs in another section is named with its section.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from qex.core.claims import resource_name_problem
from qex.core.config import (
    BudgetSection,
    BudgetValue,
    ClaimsSection,
    Config,
    ConfigError,
    DefaultsSection,
    EnforceSection,
    GcSection,
    HistorySection,
    HooksSection,
    LearnSection,
    LogsSection,
    PeersSection,
    PolitenessSection,
    Pool,
    QueueSection,
    RetrySection,
    SubmitSection,
    SystemSection,
)
from qex.core.hints import ALSO_CHOICES
from qex.core.names import visible
from qex.core.states import FINAL, parse_state
from qex.core.units import (
    KIB,
    MIB,
    NO_LIMIT_WORDS,
    UnitError,
    parse_count,
    parse_duration,
    parse_number,
    parse_percent,
    parse_size,
)

#: The smallest log limit: below it the head and the tail that qex keeps would not fit.
MIN_LOG_BYTES = 16 * KIB
#: The smallest memory budget that can run a job at all.
MIN_MEM_BUDGET = 64 * MIB

ENFORCE_MODES = ("off", "soft", "hard")
OVERSIZED_POLICIES = ("run-when-idle", "reject", "queue")
IO_CLASSES = ("none", "best-effort", "idle")
CAPTURE_MODES = ("all", "minimal", "none")

#: Every key of every section, in the order of the config page.
SECTIONS: dict[str, tuple[str, ...]] = {
    "budget": ("cpu", "mem"),
    "system": ("reserve_mem", "max_pressure"),
    "enforce": ("mode", "mem_overcommit", "use_systemd"),
    "peers": ("enabled", "dir", "stale_after"),
    "queue": ("oversized", "settle", "max_bypass"),
    "politeness": ("nice", "io", "oom_score_adj"),
    "submit": ("env_capture", "minimal_env"),
    "claims": ("export_env", "also"),
    "learn": ("enabled", "margin"),
    "logs": ("max_bytes",),
    "retry": ("on_oom", "growth"),
    "history": ("keep",),
    "gc": ("keep",),
    "defaults": ("cpu", "mem", "timeout", "max_queue_time", "vram"),
    "hooks": ("on_stop", "on_stop_states", "timeout"),
}
POOL_KEYS = ("name", "count", "devices", "size", "env")

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SIZE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,31}$")


class _Reader:
    """One section of one file: typed getters that fail with the file, the key and a remedy."""

    def __init__(
        self, source: str, section: str, table: Mapping[str, Any], *, pool: bool = False
    ) -> None:
        self.source = source
        self.section = section
        self.table = table
        self.pool = pool

    def label(self, key: str) -> str:
        if self.pool:
            return f"`{key}` of the pool `{self.section}`"
        return f"`[{self.section}] {key}`"

    def fail(self, key: str, detail: str) -> NoReturn:
        raise ConfigError(f"in the config file {self.source}, {self.label(key)} {detail}")

    def has(self, key: str) -> bool:
        return key in self.table

    def shown(self, key: str) -> str:
        return visible(str(self.table[key]))

    def unit(self, key: str, parse: Callable[[], Any]) -> Any:
        try:
            return parse()
        except UnitError as exc:
            self.fail(key, f"is wrong: {exc}")

    def boolean(self, key: str, default: bool) -> bool:
        if key not in self.table:
            return default
        value = self.table[key]
        if not isinstance(value, bool):
            self.fail(key, (
                f"must be true or false (no quotation marks), and `{self.shown(key)}` "
                "is neither"
            ))
        return value

    def choice(self, key: str, default: str, choices: tuple[str, ...]) -> str:
        if key not in self.table:
            return default
        value = self.table[key]
        word = value.strip().lower() if isinstance(value, str) else ""
        if word not in choices:
            listed = ", ".join(f'"{c}"' for c in choices)
            self.fail(key, (
                f"must be one of {listed}, and `{self.shown(key)}` is not; use one of "
                "those words"
            ))
        return word

    def count(self, key: str, default: int, low: int | None = None, high: int | None = None) -> int:
        if key not in self.table:
            return default
        number: int = self.unit(key, lambda: parse_count(self.table[key], what="the value"))
        if (low is not None and number < low) or (high is not None and number > high):
            if high is None:
                self.fail(key, (
                    f"must be {low} or more, and it is {number}; give a value of {low} "
                    "or more"
                ))
            if low is None:
                self.fail(key, (
                    f"must be {high} or less, and it is {number}; give a value of "
                    f"{high} or less"
                ))
            self.fail(key, (
                f"must be from {low} to {high}, and it is {number}; give a value in "
                "that range"
            ))
        return number

    def number(self, key: str, default: float) -> float:
        if key not in self.table:
            return default
        value: float = self.unit(key, lambda: parse_number(self.table[key], what="the value"))
        return value

    def size(self, key: str) -> int:
        value: int = self.unit(key, lambda: parse_size(self.table[key], what="size"))
        return value

    def duration(self, key: str) -> float | None:
        value: float | None = self.unit(key, lambda: parse_duration(self.table[key], what="time"))
        return value

    def string_list(self, key: str, default: tuple[str, ...], what: str) -> tuple[str, ...]:
        if key not in self.table:
            return default
        value = self.table[key]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(key, f"must be a list of {what} in square brackets, such as [\"a\", \"b\"]")
        if any("\0" in v for v in value):
            self.fail(key, "holds a NUL character, which no program can receive; remove it")
        return tuple(value)


def _no_limit(value: Any) -> bool:
    return (isinstance(value, str) and value.strip().lower() in NO_LIMIT_WORDS) or (
        not isinstance(value, bool) and isinstance(value, (int, float)) and value == 0
    )


def _budget(reader: _Reader, key: str, default: BudgetValue, *, cores: bool) -> BudgetValue:
    if not reader.has(key):
        return default
    raw = reader.table[key]
    if isinstance(raw, str) and raw.strip().endswith("%"):
        fraction = parse_percent(raw)
        if fraction is None or not 0 < fraction <= 1:
            reader.fail(key, (
                f"gives `{reader.shown(key)}`; a percentage must be above 0% and at "
                "most 100%"
            ))
        return BudgetValue(fraction=fraction)
    if cores:
        number = reader.unit(key, lambda: parse_count(raw, what="the cpu budget"))
        if number < 1:
            reader.fail(key, (
                f"is {number}; the budget needs 1 core or more, or a percentage such "
                "as \"75%\""
            ))
        return BudgetValue(absolute=number)
    size = reader.size(key)
    if size < MIN_MEM_BUDGET:
        reader.fail(
            key,
            f"is {size} bytes, too little to run any job; give at least 64MB, a size such as "
            "\"16GB\", or a percentage such as \"75%\"",
        )
    return BudgetValue(absolute=size)


def _sections(data: Mapping[str, Any], source: str) -> dict[str, _Reader]:
    """Check every section and key name; return a reader for each known section."""
    readers: dict[str, _Reader] = {}
    for name, table in data.items():
        if name == "pool":
            continue
        if name in SECTIONS:
            if not isinstance(table, dict):
                raise ConfigError(
                    f"in the config file {source}, `{name}` must be a section written [{name}], "
                    f"not a single value; put its keys under a line [{name}]"
                )
            for key in table:
                if key not in SECTIONS[name]:
                    raise ConfigError(_unknown_key(source, name, str(key)))
            readers[name] = _Reader(source, name, table)
            continue
        raise ConfigError(_unknown_section(source, str(name), table))
    for name in SECTIONS:
        readers.setdefault(name, _Reader(source, name, {}))
    return readers


def _unknown_key(source: str, section: str, key: str) -> str:
    elsewhere = [s for s, keys in SECTIONS.items() if key in keys and s != section]
    if elsewhere:
        where = " or ".join(f"[{s}]" for s in elsewhere)
        hint = f"that key belongs in {where}; move it there"
    else:
        close = difflib.get_close_matches(key, SECTIONS[section], n=1, cutoff=0.6)
        known = ", ".join(SECTIONS[section])
        hint = (f"did you mean `{close[0]}`? Correct the name" if close
                else f"the keys of [{section}] are {known}; correct or delete it")
    return (
        f"the config file {source} has a key `{visible(key)}` in [{section}] that qex does not "
        f"know; {hint} (qex refuses unknown keys so that a misspelt setting is never ignored)"
    )


def _unknown_section(source: str, name: str, value: Any) -> str:
    shown = visible(name)
    if not isinstance(value, dict):
        owners = [s for s, keys in SECTIONS.items() if name in keys]
        if owners:
            where = " or ".join(f"[{s}]" for s in owners)
            return (
                f"the config file {source} sets `{shown}` outside any section; it belongs "
                f"in {where}, so put it under that section's line"
            )
    close = difflib.get_close_matches(name, [*SECTIONS, "pool"], n=1, cutoff=0.6)
    hint = (f"did you mean [{close[0]}]?" if close else
            f"the sections are {', '.join(f'[{s}]' for s in SECTIONS)} and [[pool]];")
    return (
        f"the config file {source} has a section or key `{shown}` that qex does not know; "
        f"{hint} correct or delete it (qex refuses unknown names so that a misspelt "
        "setting is never ignored)"
    )


def _pools(data: Mapping[str, Any], source: str) -> tuple[Pool, ...]:
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


def _pool(table: Mapping[str, Any], source: str, position: int) -> Pool:
    for key in table:
        if key not in POOL_KEYS:
            close = difflib.get_close_matches(str(key), POOL_KEYS, n=1, cutoff=0.6)
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
    reader = _Reader(source, name, table, pool=True)
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


def parse_config(data: Mapping[str, Any], source: str) -> Config:
    """The `Config` for a parsed config file; `source` names the file in every message."""
    r = _sections(data, source)
    return Config(
        budget=_parse_budget(r["budget"]),
        system=_parse_system(r["system"]),
        enforce=_parse_enforce(r["enforce"]),
        peers=_parse_peers(r["peers"]),
        queue=_parse_queue(r["queue"]),
        politeness=_parse_politeness(r["politeness"]),
        submit=_parse_submit(r["submit"]),
        claims=_parse_claims(r["claims"]),
        learn=_parse_learn(r["learn"]),
        logs=_parse_logs(r["logs"]),
        retry=_parse_retry(r["retry"]),
        history=HistorySection(keep=_keep(r["history"])),
        gc=GcSection(keep=_keep(r["gc"])),
        defaults=_parse_defaults(r["defaults"]),
        hooks=_parse_hooks(r["hooks"]),
        pools=_pools(data, source),
    )


def _parse_budget(r: _Reader) -> BudgetSection:
    base = BudgetSection()
    return BudgetSection(
        cpu=_budget(r, "cpu", base.cpu, cores=True),
        mem=_budget(r, "mem", base.mem, cores=False),
    )


def _parse_system(r: _Reader) -> SystemSection:
    base = SystemSection()
    reserve = r.size("reserve_mem") if r.has("reserve_mem") else base.reserve_mem
    pressure = r.number("max_pressure", base.max_pressure)
    if not 0 <= pressure <= 100:
        r.fail("max_pressure", (
            f"is {pressure:g}; it is a percentage of time (PSI), so give 0 to "
            "100"
        ))
    return SystemSection(reserve_mem=reserve, max_pressure=pressure)


def _parse_enforce(r: _Reader) -> EnforceSection:
    base = EnforceSection()
    overcommit = r.number("mem_overcommit", base.mem_overcommit)
    if overcommit < 1:
        r.fail(
            "mem_overcommit",
            f"is {overcommit:g}; it multiplies the claim to give the hard ceiling in soft mode, "
            "so it must be 1 or more",
        )
    return EnforceSection(
        mode=r.choice("mode", base.mode, ENFORCE_MODES),
        mem_overcommit=overcommit,
        use_systemd=r.boolean("use_systemd", base.use_systemd),
    )


def _parse_peers(r: _Reader) -> PeersSection:
    base = PeersSection()
    directory = base.dir
    if r.has("dir"):
        value = r.table["dir"]
        if not isinstance(value, str) or not value.startswith("/") or "\0" in value:
            r.fail("dir", "must be an absolute path in quotation marks, such as \"/tmp/qex\"")
        directory = value
    stale = r.duration("stale_after") if r.has("stale_after") else base.stale_after
    return PeersSection(
        enabled=r.boolean("enabled", base.enabled),
        dir=directory,
        stale_after=base.stale_after if stale is None else stale,
    )


def _parse_queue(r: _Reader) -> QueueSection:
    base = QueueSection()
    settle = r.duration("settle") if r.has("settle") else base.settle
    return QueueSection(
        oversized=r.choice("oversized", base.oversized, OVERSIZED_POLICIES),
        settle=0.0 if settle is None else settle,
        max_bypass=r.count("max_bypass", base.max_bypass, low=0),
    )


def _parse_politeness(r: _Reader) -> PolitenessSection:
    base = PolitenessSection()
    return PolitenessSection(
        nice=r.count("nice", base.nice, low=-20, high=19),
        io=r.choice("io", base.io, IO_CLASSES),
        oom_score_adj=r.count("oom_score_adj", base.oom_score_adj, low=-1000, high=1000),
    )


def _parse_submit(r: _Reader) -> SubmitSection:
    base = SubmitSection()
    names = r.string_list("minimal_env", base.minimal_env, "variable names")
    for name in names:
        if not name or "=" in name:
            r.fail("minimal_env", (
                f"holds `{visible(name)}`, which is not a variable name; give "
                "names such as \"PATH\""
            ))
    return SubmitSection(
        env_capture=r.choice("env_capture", base.env_capture, CAPTURE_MODES),
        minimal_env=tuple(dict.fromkeys(names)),
    )


def _parse_claims(r: _Reader) -> ClaimsSection:
    base = ClaimsSection()
    also = r.string_list("also", base.also, "names")
    for name in also:
        if name not in ALSO_CHOICES:
            r.fail(
                "also",
                f"holds `{visible(name)}`, and it takes only \"java\" and \"make\": each of "
                "those two hints has a cost, so each is a choice, and qex knows no other; "
                "remove the other names",
            )
    return ClaimsSection(
        export_env=r.boolean("export_env", base.export_env), also=tuple(dict.fromkeys(also))
    )


def _parse_learn(r: _Reader) -> LearnSection:
    base = LearnSection()
    margin = r.number("margin", base.margin)
    if margin < 1:
        r.fail("margin", (
            f"is {margin:g}; it multiplies a measurement, and a claim below what a "
            "job used would fail, so give 1 or more"
        ))
    return LearnSection(enabled=r.boolean("enabled", base.enabled), margin=margin)


def _parse_logs(r: _Reader) -> LogsSection:
    if not r.has("max_bytes"):
        return LogsSection()
    raw = r.table["max_bytes"]
    if _no_limit(raw):
        return LogsSection(max_bytes=None)
    size = r.size("max_bytes")
    if size < MIN_LOG_BYTES:
        r.fail(
            "max_bytes",
            f"is {size} bytes, below the smallest limit of {MIN_LOG_BYTES} bytes (16KB) that "
            "still holds a useful head and tail; give 16KB or more, or \"0\" for no limit",
        )
    return LogsSection(max_bytes=size)


def _parse_retry(r: _Reader) -> RetrySection:
    base = RetrySection()
    growth = r.number("growth", base.growth)
    if growth <= 1:
        r.fail("growth", (
            f"is {growth:g}; it multiplies the claim after a memory kill, so it must "
            "be above 1 (2.0 doubles it)"
        ))
    return RetrySection(on_oom=r.count("on_oom", base.on_oom, low=0), growth=growth)


def _keep(r: _Reader) -> float:
    if not r.has("keep"):
        return HistorySection().keep
    keep = r.duration("keep")
    return HistorySection().keep if keep is None else keep


def _parse_defaults(r: _Reader) -> DefaultsSection:
    base = DefaultsSection()
    cpu = base.cpu
    if r.has("cpu"):
        raw = r.table["cpu"]
        if isinstance(raw, str) and raw.strip().endswith("%"):
            r.fail(
                "cpu",
                f"is `{r.shown('cpu')}`, a percentage; this key gives the cores of ONE job, so it "
                "takes a whole number such as 1 or 2 (a percentage belongs in [budget] cpu)",
            )
        cpu = r.count("cpu", base.cpu, low=1)
    mem = base.mem
    if r.has("mem") and r.table["mem"] is not None:
        raw = r.table["mem"]
        if isinstance(raw, str) and raw.strip().endswith("%"):
            r.fail(
                "mem",
                f"is `{r.shown('mem')}`, a percentage; this key gives the memory of ONE job, so it "
                "takes a size such as \"2GB\" (a percentage belongs in [budget] mem)",
            )
        mem = r.size("mem")
        if mem < 1:
            r.fail("mem", (
                "is 0; a job needs 1 byte or more, so give a size such as \"2GB\" or "
                "remove the key"
            ))
    timeout = r.duration("timeout") if r.has("timeout") else base.timeout
    queue_time = r.duration("max_queue_time") if r.has("max_queue_time") else base.max_queue_time
    vram = base.vram
    if r.has("vram") and r.table["vram"] is not None:
        vram = r.size("vram") or None
    return DefaultsSection(cpu=cpu, mem=mem, timeout=timeout, max_queue_time=queue_time, vram=vram)


def _parse_hooks(r: _Reader) -> HooksSection:
    base = HooksSection()
    if r.has("on_stop") and isinstance(r.table["on_stop"], str):
        r.fail(
            "on_stop",
            "is a single string; give a list, the program and then its arguments, such as "
            "[\"/usr/bin/notify-send\", \"a qex job stopped\"] (qex starts no shell)",
        )
    on_stop = r.string_list("on_stop", base.on_stop, "strings (the program, then its arguments)")
    if on_stop and not on_stop[0]:
        r.fail("on_stop", "names an empty program; give the program first, as an absolute path")
    states: list[str] = []
    for word in r.string_list("on_stop_states", base.on_stop_states, "state names"):
        try:
            state = parse_state(word)
        except ValueError:
            state = None
        if state is None or state not in FINAL:
            finals = ", ".join(s.value for s in sorted(FINAL, key=_state_order))
            r.fail("on_stop_states", (
                f"holds `{visible(word)}`, which is not a final state; use "
                f"only {finals}"
            ))
        states.append(state.value)
    timeout = r.duration("timeout") if r.has("timeout") else base.timeout
    return HooksSection(
        on_stop=on_stop,
        on_stop_states=tuple(dict.fromkeys(states)),
        timeout=base.timeout if timeout is None else timeout,
    )


def _state_order(state: Any) -> int:
    order = ("completed", "failed", "killed", "timeout", "expired", "oom", "cancelled", "skipped")
    return order.index(state.value) if state.value in order else len(order)


def _num(value: float) -> int | float:
    """A whole number of seconds as an int, so `settle = 3` shows as 3 and not 3.0."""
    return int(value) if math.isfinite(value) and float(value).is_integer() else value


def _limit(value: float | None) -> int | float | str:
    return "none" if value is None else _num(value)


def _percent_text(fraction: float) -> str:
    """The shortest `N%` that parses back to exactly `fraction`, so the dict round-trips."""
    centre = fraction * 100
    candidates = [centre, math.nextafter(centre, math.inf), math.nextafter(centre, -math.inf)]
    for digits in range(1, 18):
        for candidate in candidates:
            text = f"{candidate:.{digits}g}"
            if float(text) / 100 == fraction:
                return f"{text}%"
    return f"{centre!r}%"


def _budget_out(value: BudgetValue) -> int | str:
    if value.absolute is not None:
        return value.absolute
    return _percent_text(0.75 if value.fraction is None else value.fraction)


def config_to_dict(config: Config) -> dict[str, Any]:
    """The resolved config as plain data that TOML and JSON can both hold.

    `parse_config(config_to_dict(c), ...) == c` for every valid `c`: a "no limit" shows as
    the word `none` (or `unlimited` for the log limit), and a default that depends on the
    machine (`[defaults] mem`, `[defaults] vram`) is left out, as it is in the file.
    """
    defaults: dict[str, Any] = {
        "cpu": config.defaults.cpu,
        "timeout": _limit(config.defaults.timeout),
        "max_queue_time": _limit(config.defaults.max_queue_time),
    }
    if config.defaults.mem is not None:
        defaults["mem"] = config.defaults.mem
    defaults["vram"] = config.defaults.vram or 0
    pools: list[dict[str, Any]] = []
    for pool in config.pools:
        entry: dict[str, Any] = {"name": pool.name}
        if pool.devices is not None:
            entry["devices"] = list(pool.devices)
            if pool.size is not None:
                entry["size"] = pool.size
            if pool.env is not None:
                entry["env"] = pool.env
        else:
            entry["count"] = pool.count
        pools.append(entry)
    logs = config.logs.max_bytes
    data: dict[str, Any] = {
        "budget": {"cpu": _budget_out(config.budget.cpu), "mem": _budget_out(config.budget.mem)},
        "system": {
            "reserve_mem": config.system.reserve_mem,
            "max_pressure": _num(config.system.max_pressure),
        },
        "enforce": {
            "mode": config.enforce.mode,
            "mem_overcommit": _num(config.enforce.mem_overcommit),
            "use_systemd": config.enforce.use_systemd,
        },
        "peers": {
            "enabled": config.peers.enabled,
            "dir": config.peers.dir,
            "stale_after": _num(config.peers.stale_after),
        },
        "queue": {
            "oversized": config.queue.oversized,
            "settle": _num(config.queue.settle),
            "max_bypass": config.queue.max_bypass,
        },
        "politeness": {
            "nice": config.politeness.nice,
            "io": config.politeness.io,
            "oom_score_adj": config.politeness.oom_score_adj,
        },
        "submit": {
            "env_capture": config.submit.env_capture,
            "minimal_env": list(config.submit.minimal_env),
        },
        "claims": {"export_env": config.claims.export_env, "also": list(config.claims.also)},
        "learn": {"enabled": config.learn.enabled, "margin": _num(config.learn.margin)},
        "logs": {"max_bytes": "unlimited" if logs is None else logs},
        "retry": {"on_oom": config.retry.on_oom, "growth": _num(config.retry.growth)},
        "history": {"keep": _num(config.history.keep)},
        "gc": {"keep": _num(config.gc.keep)},
        "defaults": defaults,
        "hooks": {
            "on_stop": list(config.hooks.on_stop),
            "on_stop_states": list(config.hooks.on_stop_states),
            "timeout": _num(config.hooks.timeout),
        },
    }
    if pools:
        data["pool"] = pools
    return data
