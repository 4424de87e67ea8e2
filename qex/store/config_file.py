"""Read `qex.toml` safely, and notice when it changes (the coordinator's hot reload).

Reading: a missing file means the defaults. A path that is not a regular file (a FIFO, a
directory, a device) is refused WITHOUT being opened, because opening a FIFO waits for a
writer and reading a device never ends; the file is then opened with O_NONBLOCK and checked
again with fstat, which closes the race where the path is swapped between the two steps.
A symbolic link to a regular file is fine.

Hot reload (`ConfigWatcher`): qex cannot be told when a file changes, so it looks. A writer
that saves the file one line at a time leaves a half file that is still valid TOML, and
every key not yet written would silently take its default. So a new content is taken only
once it has SETTLED: about ten looks over half a second must all agree. A content that
cannot be used (empty, gone, not a regular file, not text, invalid) never turns into the
defaults: the old values stay and `error` says why, until the file is corrected.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

from qex.core.config import Config, ConfigError
from qex.core.config_parse import parse_config
from qex.core.model import dataclass
from qex.core.names import visible
from qex.store.paths import Paths
from qex.store.structured import kind_of, toml_error_text

#: A config file is a few kilobytes; this bounds the read of something that is not one.
MAX_CONFIG_BYTES = 4 * 1024 * 1024

MISSING = "missing"
NOT_REGULAR = "not-regular"
UNREADABLE = "unreadable"
CONTENT = "content"


@dataclass(frozen=True)
class Look:
    """One look at the config path: what is there, and the bytes when it is a regular file."""

    kind: str                  # MISSING | NOT_REGULAR | UNREADABLE | CONTENT
    data: bytes = b""
    detail: str = ""           # what the path is (not regular) or why it cannot be read

    def fingerprint(self) -> tuple[str, str, bytes]:
        # The bytes themselves: a config file is small, and comparing them needs no hash
        # library (hashlib would load OpenSSL into every supervisor, ~3.6 MB).
        return (self.kind, self.detail, self.data if self.kind == CONTENT else b"")


def look_at(path: Path) -> Look:
    """Stat, then open without blocking, then fstat again, then read (bounded)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return Look(MISSING)
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            return Look(MISSING)
        return Look(UNREADABLE, detail=exc.strerror or str(exc))
    if not stat.S_ISREG(info.st_mode):
        return Look(NOT_REGULAR, detail=kind_of(info.st_mode))
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return Look(MISSING)
    except OSError as exc:
        return Look(UNREADABLE, detail=exc.strerror or str(exc))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return Look(NOT_REGULAR, detail=kind_of(info.st_mode))
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_CONFIG_BYTES:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_CONFIG_BYTES:
            return Look(UNREADABLE, detail="it is larger than 4MB, far beyond any config file")
        return Look(CONTENT, data=b"".join(chunks))
    except OSError as exc:
        return Look(UNREADABLE, detail=exc.strerror or str(exc))
    finally:
        os.close(fd)


def config_from_look(look: Look, path: Path) -> Config:
    """The config for one look; ConfigError names the file, the fault and the remedy."""
    shown = visible(str(path))
    if look.kind == MISSING:
        return Config()
    if look.kind == NOT_REGULAR:
        raise ConfigError(
            f"the config path {shown} is {look.detail}, not a regular file, so qex does not "
            "read it; replace it with a regular file (or a link to one), or remove it"
        )
    if look.kind == UNREADABLE:
        raise ConfigError(
            f"qex cannot read the config file {shown} ({look.detail}); fix its permissions "
            "or replace it"
        )
    try:
        text = look.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = look.data[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"the config file {shown} is not text (a byte on line {line} is not UTF-8); "
            "save it as UTF-8 text"
        ) from None
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"the config file {shown} is not valid TOML: {toml_error_text(exc)}; correct that "
            "line, then run `qex config show` to test the file"
        ) from None
    except RecursionError:
        raise ConfigError(
            f"the config file {shown} nests its values deeper than any qex setting does; "
            "correct the file, then run `qex config show` to test it"
        ) from None
    return parse_config(data, shown)


#: The last content parsed, and its config. The coordinator reads the file at its start, its
#: watcher and its hook runner look at it again, each `submit_words` reads it as it is now,
#: and the fork server parses it before it forks a supervisor (whose copy then needs no
#: parse); the same bytes are parsed once. A failed parse is not kept: it raises again.
_last_parsed: tuple[str, tuple[str, str, bytes], Config] | None = None


def parsed_config(look: Look, path: Path) -> Config:
    """`config_from_look`, parsed again only when the path or the bytes changed (the parse
    depends on nothing else)."""
    global _last_parsed
    key = str(path)
    fingerprint = look.fingerprint()
    last = _last_parsed
    if last is not None and last[0] == key and last[1] == fingerprint:
        return last[2]
    config = config_from_look(look, path)
    _last_parsed = (key, fingerprint, config)
    return config


def load_config(paths: Paths) -> Config:
    """The config in force for these paths: the defaults when the file does not exist.

    The file is read each time; its parse is reused while the bytes are the same
    (`parsed_config`): a supervisor reads it at its start and again for the stop hook."""
    return parsed_config(look_at(paths.config_file), paths.config_file)


def load_config_and_look(paths: Paths) -> tuple[Config, Look]:
    """`load_config`, and the look it came from (for `ConfigWatcher(first=...)`)."""
    look = look_at(paths.config_file)
    return parsed_config(look, paths.config_file), look


Reader = Callable[[Path], Look]


class ConfigWatcher:
    """Decide when a changed config file may replace the values in force.

    The coordinator calls `check(now)` on every wake-up and on a slow heartbeat. While a new
    content settles, `next_check_delay()` asks to be called again soon (every `LOOK_EVERY`
    seconds); when nothing settles it returns None, so an unchanged file costs nothing but
    one stat and one small read per wake-up.
    """

    #: Looks that must agree before a new content is taken ...
    SETTLE_LOOKS = 10
    #: ... taken this far apart, so the agreement spans about half a second.
    LOOK_EVERY = 0.05

    def __init__(self, paths: Paths, initial: Config, *, reader: Reader = look_at,
                 first: Look | None = None) -> None:
        self.path = paths.config_file
        self._reader = reader
        self.error: str | None = None
        self._candidate: tuple[str, str, bytes] | None = None
        self._first_seen = 0.0
        self._agreeing = 0
        # The content in force is what is on disk now, if it gives the initial config. If the
        # file changed since the caller loaded it (or cannot be used), nothing counts as in
        # force, so the first check settles on the current content and reports it. `first`
        # is the look the caller took `initial` from: the same bytes now need no parse.
        now = reader(self.path)
        self._installed: tuple[str, str, bytes] | None = None
        if first is not None and now.fingerprint() == first.fingerprint():
            self._installed = now.fingerprint()
            return
        try:
            if parsed_config(now, self.path) == initial:
                self._installed = now.fingerprint()
        except ConfigError:
            pass

    @property
    def settling(self) -> bool:
        return self._candidate is not None

    def next_check_delay(self) -> float | None:
        """Seconds until the next look while a change settles; None when nothing settles."""
        return self.LOOK_EVERY if self._candidate is not None else None

    def check(self, now: float) -> Config | None:
        """A new Config when the file changed and settled; None otherwise (see `error`)."""
        look = self._reader(self.path)
        fingerprint = look.fingerprint()
        if fingerprint == self._installed:
            # Back to what is in force (a writer put the old content back): nothing to take.
            self._candidate = None
            return None
        if fingerprint != self._candidate:
            self._candidate = fingerprint
            self._first_seen = now
            self._agreeing = 1
            return None
        self._agreeing += 1
        # A hair of tolerance: looks taken LOOK_EVERY apart by a caller that adds floats
        # must not miss the mark by a rounding error and wait a whole extra look.
        settle_time = self.LOOK_EVERY * (self.SETTLE_LOOKS - 1) - 1e-6
        if self._agreeing < self.SETTLE_LOOKS or now - self._first_seen < settle_time:
            return None
        # Settled. Whatever the outcome, this content is now the one qex has judged, so the
        # same bad content is not judged again on every wake-up.
        self._candidate = None
        self._installed = fingerprint
        reason = self._unusable(look)
        if reason is not None:
            self.error = reason
            return None
        try:
            config = parsed_config(look, self.path)
        except ConfigError as exc:
            self.error = f"{exc} (until then the coordinator keeps the values it had)"
            return None
        self.error = None
        return config

    def _unusable(self, look: Look) -> str | None:
        shown = visible(str(self.path))
        keep = "so the coordinator keeps the values it had"
        if look.kind == MISSING:
            return (
                f"the config file {shown} is gone, {keep}; put it back, or restart the "
                "coordinator to use the defaults"
            )
        if look.kind == NOT_REGULAR:
            return (
                f"the config path {shown} is {look.detail}, not a regular file, {keep}; "
                "replace it with a regular file"
            )
        if look.kind == UNREADABLE:
            return (
                f"qex cannot read the config file {shown} ({look.detail}), {keep}; "
                "fix its permissions"
            )
        if not look.data.strip():
            return (
                f"the config file {shown} is empty, {keep}; write the whole file in one step "
                "(a temporary file renamed over it), or delete it and restart the coordinator "
                "to use the defaults"
            )
        return None
