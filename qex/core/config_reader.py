"""Read the sections of a parsed `qex.toml`: known names, and typed values with good errors.

Pure. `SectionReader` is one section of one file; each getter either returns the parsed value
or raises `ConfigError` with the file, the key, what is wrong and what to write instead.
`check_sections` refuses any section or key that qex does not know, and suggests the nearest
known one, or the section where the key belongs, because a misspelt key that is silently
ignored looks exactly like a setting that works.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from qex.core.config import ConfigError
from qex.core.names import visible
from qex.core.units import (
    NO_LIMIT_WORDS,
    UnitError,
    parse_count,
    parse_duration,
    parse_number,
    parse_size,
)


def _sections() -> dict[str, tuple[str, ...]]:
    """Every key of every section, read off the `Config` record (its `pools` are `[[pool]]`
    tables, read on their own), so a new setting is known the moment it has a field."""
    from qex.core.config import Config
    from qex.core.model import fields

    return {
        spec.name: tuple(key.name for key in fields(spec.value()))
        for spec in fields(Config) if spec.name != "pools"
    }


#: Every key of every section, in the order of the `Config` record (and the config page).
SECTIONS: dict[str, tuple[str, ...]] = _sections()


class SectionReader:
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


def no_limit(value: Any) -> bool:
    return (isinstance(value, str) and value.strip().lower() in NO_LIMIT_WORDS) or (
        not isinstance(value, bool) and isinstance(value, (int, float)) and value == 0
    )


def check_sections(data: Mapping[str, Any], source: str) -> dict[str, SectionReader]:
    """Check every section and key name; return a reader for each known section."""
    readers: dict[str, SectionReader] = {}
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
            readers[name] = SectionReader(source, name, table)
            continue
        raise ConfigError(_unknown_section(source, str(name), table))
    for name in SECTIONS:
        readers.setdefault(name, SectionReader(source, name, {}))
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
