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

from collections.abc import Mapping
from typing import Any

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
    QueueSection,
    RetrySection,
    SubmitSection,
    SystemSection,
)
from qex.core.config_dict import config_to_dict
from qex.core.config_pools import POOL_KEYS, parse_pools
from qex.core.config_reader import (
    SECTIONS,
    SectionReader,
    check_sections,
    legacy_note,
    no_limit,
)
from qex.core.engine_config import parse_engine
from qex.core.hints import ALSO_CHOICES
from qex.core.names import visible
from qex.core.states import FINAL, parse_state
from qex.core.units import (
    KIB,
    MIB,
    parse_count,
    parse_percent,
)

__all__ = [
    "POOL_KEYS",
    "SECTIONS",
    "config_to_dict",
    "parse_config",
]

#: The smallest log limit: below it the head and the tail that qex keeps would not fit.
MIN_LOG_BYTES = 16 * KIB
#: The smallest memory budget that can run a job at all.
MIN_MEM_BUDGET = 64 * MIB

ENFORCE_MODES = ("off", "soft", "hard")
OVERSIZED_POLICIES = ("run-when-idle", "reject", "queue")
IO_CLASSES = ("none", "best-effort", "idle")
CAPTURE_MODES = ("all", "minimal", "none")


def _budget(reader: SectionReader, key: str, default: BudgetValue, *, cores: bool) -> BudgetValue:
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


def parse_config(data: Mapping[str, Any], source: str) -> Config:
    """The `Config` for a parsed config file; `source` names the file in every message."""
    legacy: list[str] = []
    r = check_sections(data, source, legacy)
    notes: list[str] = []
    config = Config(
        budget=_parse_budget(r["budget"]),
        system=_parse_system(r["system"]),
        enforce=_parse_enforce(r["enforce"]),
        peers=_parse_peers(r["peers"]),
        queue=_parse_queue(r["queue"]),
        politeness=_parse_politeness(r["politeness"], notes),
        submit=_parse_submit(r["submit"]),
        claims=_parse_claims(r["claims"]),
        learn=_parse_learn(r["learn"]),
        logs=_parse_logs(r["logs"]),
        retry=_parse_retry(r["retry"]),
        history=HistorySection(keep=_keep(r["history"])),
        gc=GcSection(keep=_keep(r["gc"])),
        defaults=_parse_defaults(r["defaults"]),
        hooks=_parse_hooks(r["hooks"]),
        engine=parse_engine(r["engine"]),
        pools=parse_pools(data, source),
    )
    for reader in r.values():
        legacy.extend(reader.legacy)
    if legacy:
        notes.insert(0, legacy_note(source, legacy))
    if not notes:
        return config
    from qex.core.model import replace

    return replace(config, notes=tuple(notes))


def _parse_budget(r: SectionReader) -> BudgetSection:
    base = BudgetSection()
    return BudgetSection(
        cpu=_budget(r, "cpu", base.cpu, cores=True),
        mem=_budget(r, "mem", base.mem, cores=False),
    )


def _parse_system(r: SectionReader) -> SystemSection:
    base = SystemSection()
    reserve = r.size("reserve_mem") if r.has("reserve_mem") else base.reserve_mem
    pressure = r.number("max_pressure", base.max_pressure)
    if not 0 <= pressure <= 100:
        r.fail("max_pressure", (
            f"is {pressure:g}; it is a percentage of time (PSI), so give 0 to "
            "100"
        ))
    return SystemSection(reserve_mem=reserve, max_pressure=pressure)


def _parse_enforce(r: SectionReader) -> EnforceSection:
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


def _parse_peers(r: SectionReader) -> PeersSection:
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


def _parse_queue(r: SectionReader) -> QueueSection:
    base = QueueSection()
    settle = r.duration("settle") if r.has("settle") else base.settle
    return QueueSection(
        oversized=r.choice("oversized", base.oversized, OVERSIZED_POLICIES),
        settle=0.0 if settle is None else settle,
        max_bypass=r.count("max_bypass", base.max_bypass, low=0),
    )


def _parse_politeness(r: SectionReader, notes: list[str]) -> PolitenessSection:
    """A bad value here gives the defaults and a note, not a refusal: how kindly a job gives
    way never decides whether it may run, and the earlier qex ran such jobs the same way."""
    base = PolitenessSection()
    try:
        return PolitenessSection(
            nice=r.count("nice", base.nice, low=-20, high=19),
            io=r.choice("io", base.io, IO_CLASSES),
            oom_score_adj=r.count("oom_score_adj", base.oom_score_adj, low=-1000, high=1000),
        )
    except ConfigError as exc:
        notes.append(f"{exc}; until then jobs run with the default politeness (nice "
                     f"{base.nice}, io {base.io}, oom_score_adj {base.oom_score_adj})")
        return base


def _parse_submit(r: SectionReader) -> SubmitSection:
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


def _parse_claims(r: SectionReader) -> ClaimsSection:
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


def _parse_learn(r: SectionReader) -> LearnSection:
    base = LearnSection()
    margin = r.number("margin", base.margin)
    if margin < 1:
        r.fail("margin", (
            f"is {margin:g}; it multiplies a measurement, and a claim below what a "
            "job used would fail, so give 1 or more"
        ))
    return LearnSection(enabled=r.boolean("enabled", base.enabled), margin=margin)


def _parse_logs(r: SectionReader) -> LogsSection:
    if not r.has("max_bytes"):
        return LogsSection()
    raw = r.table["max_bytes"]
    if no_limit(raw):
        return LogsSection(max_bytes=None)
    size = r.size("max_bytes")
    if size < MIN_LOG_BYTES:
        r.fail(
            "max_bytes",
            f"is {size} bytes, below the smallest limit of {MIN_LOG_BYTES} bytes (16KB) that "
            "still holds a useful head and tail; give 16KB or more, or \"0\" for no limit",
        )
    return LogsSection(max_bytes=size)


def _parse_retry(r: SectionReader) -> RetrySection:
    base = RetrySection()
    growth = r.number("growth", base.growth)
    if growth <= 1:
        r.fail("growth", (
            f"is {growth:g}; it multiplies the claim after a memory kill, so it must "
            "be above 1 (2.0 doubles it)"
        ))
    return RetrySection(on_oom=r.count("on_oom", base.on_oom, low=0), growth=growth)


def _keep(r: SectionReader) -> float:
    if not r.has("keep"):
        return HistorySection().keep
    keep = r.duration("keep")
    return HistorySection().keep if keep is None else keep


def _parse_defaults(r: SectionReader) -> DefaultsSection:
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


def _parse_hooks(r: SectionReader) -> HooksSection:
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
