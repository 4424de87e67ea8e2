"""Read the sections of a parsed `qex.toml`: known names, and typed values with good errors.

Pure. `SectionReader` is one section of one file; each getter either returns the parsed value
or raises `ConfigError` with the file, the key, what is wrong and what to write instead.
`check_sections` refuses any section or key that qex does not know, and suggests the nearest
known one, or the section where the key belongs, because a misspelt key that is silently
ignored looks exactly like a setting that works.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NoReturn, TypeVar

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

W = TypeVar("W", bound=str)

def _sections() -> dict[str, tuple[str, ...]]:
    """Every key of every section, read off the `Config` record: each field whose value is a
    record is a section (`pools` are `[[pool]]` tables read on their own, `notes` is not from
    the file), so a new setting is known the moment it has a field."""
    from qex.core.config import Config
    from qex.core.model import fields, is_record

    defaults = {spec.name: spec.value() for spec in fields(Config)}
    return {name: tuple(key.name for key in fields(value))
            for name, value in defaults.items() if is_record(value)}


#: Every key of every section, in the order of the `Config` record (and the config page).
SECTIONS: dict[str, tuple[str, ...]] = _sections()


#: Sections of the earlier qex that this qex does not use. A file written for it is read with
#: one warning, never refused: a setting that did something there must not stop all work
#: here. A key that the earlier qex did not have either is still refused (a typo).
LEGACY_SECTIONS: dict[str, tuple[str, ...]] = {
    "update": ("check", "url", "timeout"),
}
#: Values of known keys that only the earlier qex gave a meaning; each maps to ours.
LEGACY_VALUES: dict[tuple[str, str], dict[str, str]] = {
    ("enforce", "mode"): {"cooperative": "off", "single-user": "off"},
}


def legacy_note(source: str, settings: list[str]) -> str:
    """The one warning for a file that holds settings of the earlier qex."""
    listed = ", ".join(settings)
    return (
        f"the config file {source} holds {listed}, written for the earlier qex; "
        "they have no effect here and qex runs without them (delete them to silence this "
        "warning)"
    )


class SectionReader:
    """One section of one file: typed getters that fail with the file, the key and a remedy."""

    def __init__(
        self, source: str, section: str, table: Mapping[str, Any], *, pool: bool = False
    ) -> None:
        self.source = source
        self.section = section
        self.table = table
        self.pool = pool
        #: Settings of the earlier qex met while reading (`LEGACY_VALUES`).
        self.legacy: list[str] = []

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

    def choice(self, key: str, default: W, choices: tuple[W, ...]) -> W:
        if key not in self.table:
            return default
        value = self.table[key]
        word = value.strip().lower() if isinstance(value, str) else ""
        ours = LEGACY_VALUES.get((self.section, key), {}).get(word)
        if ours is not None and not self.pool:
            self.legacy.append(f"[{self.section}] {key} = \"{word}\"")
            word = ours
        for choice in choices:
            if choice == word:
                return choice
        listed = ", ".join(f'"{c}"' for c in choices)
        self.fail(key, (
            f"must be one of {listed}, and `{self.shown(key)}` is not; use one of those words"
        ))

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


def check_sections(data: Mapping[str, Any], source: str,
                   legacy: list[str] | None = None) -> dict[str, SectionReader]:
    """Check every section and key name; return a reader for each known section.

    Sections of the earlier qex (`LEGACY_SECTIONS`) are skipped and named in `legacy`."""
    readers: dict[str, SectionReader] = {}
    for name, table in data.items():
        if name == "pool":
            continue
        if name in LEGACY_SECTIONS and isinstance(table, dict):
            for key in table:
                if key not in LEGACY_SECTIONS[name]:
                    known = ", ".join(LEGACY_SECTIONS[name])
                    raise ConfigError(
                        f"the config file {source} has a key `{visible(str(key))}` in [{name}] "
                        f"that no qex knows (the earlier qex had {known} there, and this qex "
                        "uses none of them); correct or delete it"
                    )
            if legacy is not None:
                keys = ", ".join(str(k) for k in table)
                legacy.append(f"[{name}]" + (f" ({keys})" if keys else ""))
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
        from difflib import get_close_matches  # only on a mistake: 1.5 ms
        close = get_close_matches(key, SECTIONS[section], n=1, cutoff=0.6)
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
    from difflib import get_close_matches  # only on a mistake: 1.5 ms
    close = get_close_matches(name, [*SECTIONS, "pool"], n=1, cutoff=0.6)
    hint = (f"did you mean [{close[0]}]?" if close else
            f"the sections are {', '.join(f'[{s}]' for s in SECTIONS)} and [[pool]];")
    return (
        f"the config file {source} has a section or key `{shown}` that qex does not know; "
        f"{hint} correct or delete it (qex refuses unknown names so that a misspelt "
        "setting is never ignored)"
    )
