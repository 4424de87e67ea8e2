"""The coordinator's hot reload: a change is taken only once it settled, and never as defaults."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qex.core.config import Config
from qex.store.config_file import (
    CONTENT,
    MISSING,
    NOT_REGULAR,
    UNREADABLE,
    ConfigWatcher,
    Look,
    look_at,
)
from qex.store.paths import Paths

STEP = ConfigWatcher.LOOK_EVERY


class FakeFile:
    """What the config path holds now; the watcher's reader looks here."""

    def __init__(self, look: Look) -> None:
        self.look = look
        self.looks = 0

    def set_text(self, text: str) -> None:
        self.look = Look(CONTENT, data=text.encode())

    def reader(self, path: Path) -> Look:
        self.looks += 1
        return self.look


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    return Paths.from_env({"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "c")})


def watcher_for(paths: Paths, fake: FakeFile, initial: Config | None = None) -> ConfigWatcher:
    return ConfigWatcher(paths, initial if initial is not None else Config(), reader=fake.reader)


def settle(
    watcher: ConfigWatcher, start: float, looks: int = ConfigWatcher.SETTLE_LOOKS
) -> list[Config | None]:
    """Call check() `looks` times, LOOK_EVERY apart, as a coordinator following next_check_delay."""
    results = []
    now = start
    for _ in range(looks):
        results.append(watcher.check(now))
        now += STEP
    return results


def test_an_unchanged_file_asks_for_no_fast_calls(paths: Paths) -> None:
    fake = FakeFile(Look(MISSING))
    watcher = watcher_for(paths, fake)
    for tick in range(5):
        assert watcher.check(100.0 + tick * 30) is None
    assert watcher.next_check_delay() is None
    assert watcher.error is None


def test_a_change_is_taken_after_ten_agreeing_looks_over_half_a_second(paths: Paths) -> None:
    fake = FakeFile(Look(MISSING))
    watcher = watcher_for(paths, fake)
    fake.set_text("[budget]\ncpu = 16\n")
    results = settle(watcher, 10.0)
    assert results[:-1] == [None] * (ConfigWatcher.SETTLE_LOOKS - 1)
    assert results[-1] is not None and results[-1].budget.cpu.absolute == 16
    assert watcher.next_check_delay() is None
    assert watcher.check(20.0) is None  # taken once, not again


def test_while_settling_the_watcher_asks_to_be_called_soon(paths: Paths) -> None:
    fake = FakeFile(Look(MISSING))
    watcher = watcher_for(paths, fake)
    fake.set_text("[budget]\ncpu = 2\n")
    assert watcher.check(1.0) is None
    assert watcher.next_check_delay() == STEP
    assert watcher.settling


def test_a_half_written_file_is_never_taken(paths: Paths) -> None:
    fake = FakeFile(Look(MISSING))
    watcher = watcher_for(paths, fake)
    # A writer that puts the file down line by line: each look sees a longer valid file.
    # `cpu = 1` is on the way to `cpu = 16`, and would be valid TOML.
    steps = [
        "[budget]\n",
        "[budget]\ncpu = 1",
        "[budget]\ncpu = 16\n",
        "[budget]\ncpu = 16\n[defaults]\n",
    ]
    now = 0.0
    for text in steps:
        fake.set_text(text)
        for _ in range(4):
            assert watcher.check(now) is None
            now += STEP
    final = "[budget]\ncpu = 16\n[defaults]\ncpu = 2\n"
    fake.set_text(final)
    taken = [c for c in settle(watcher, now) if c is not None]
    assert len(taken) == 1
    assert taken[0].budget.cpu.absolute == 16 and taken[0].defaults.cpu == 2


def test_fast_wakeups_do_not_shorten_the_settle_time(paths: Paths) -> None:
    fake = FakeFile(Look(MISSING))
    watcher = watcher_for(paths, fake)
    fake.set_text("[budget]\ncpu = 4\n")
    for index in range(50):  # fifty wake-ups inside 0.1 s
        assert watcher.check(5.0 + index * 0.002) is None
    assert watcher.check(5.0 + STEP * (ConfigWatcher.SETTLE_LOOKS - 1)) is not None


def test_a_slow_caller_still_needs_ten_looks(paths: Paths) -> None:
    fake = FakeFile(Look(MISSING))
    watcher = watcher_for(paths, fake)
    fake.set_text("[budget]\ncpu = 4\n")
    results = [watcher.check(float(second)) for second in range(ConfigWatcher.SETTLE_LOOKS)]
    assert results[:-1] == [None] * (ConfigWatcher.SETTLE_LOOKS - 1)
    assert results[-1] is not None


def test_a_file_put_back_while_settling_ends_the_settle(paths: Paths) -> None:
    fake = FakeFile(Look(CONTENT, data=b"[defaults]\ncpu = 2\n"))
    initial = Config(defaults=type(Config().defaults)(cpu=2))
    watcher = watcher_for(paths, fake, initial)
    fake.set_text("[defaults]\ncpu = 3\n")
    assert watcher.check(0.0) is None and watcher.settling
    fake.set_text("[defaults]\ncpu = 2\n")
    assert watcher.check(STEP) is None
    assert watcher.next_check_delay() is None  # settling ended: no fast calls asked for


@pytest.mark.parametrize(
    ("look", "words"),
    [
        (Look(CONTENT, data=b""), "is empty"),
        (Look(CONTENT, data=b"  \n\n"), "is empty"),
        (Look(MISSING), "is gone"),
        (Look(NOT_REGULAR, detail="a FIFO (a named pipe)"), "not a regular file"),
        (Look(UNREADABLE, detail="Permission denied"), "cannot read"),
        (Look(CONTENT, data=b"\xff\xfe"), "not text"),
        (Look(CONTENT, data=b"[budget]\ncpu = \n"), "not valid TOML"),
        (Look(CONTENT, data=b"[budget]\ncpus = 4\n"), "did you mean `cpu`"),
    ],
)
def test_an_unusable_file_keeps_the_old_values_and_says_why(
    paths: Paths, look: Look, words: str
) -> None:
    fake = FakeFile(Look(CONTENT, data=b"[defaults]\ncpu = 2\n"))
    initial = Config(defaults=type(Config().defaults)(cpu=2))
    watcher = watcher_for(paths, fake, initial)
    fake.look = look
    assert settle(watcher, 0.0) == [None] * ConfigWatcher.SETTLE_LOOKS
    assert watcher.error is not None and words in watcher.error
    assert "keeps the values" in watcher.error
    # The same bad content is judged once, not on every later wake-up.
    assert watcher.check(50.0) is None and not watcher.settling
    # Correcting the file clears the error and gives the new values.
    fake.set_text("[defaults]\ncpu = 5\n")
    taken = [c for c in settle(watcher, 60.0) if c is not None]
    assert taken and taken[0].defaults.cpu == 5
    assert watcher.error is None


def test_a_file_that_changed_before_the_watcher_started_is_reported(paths: Paths) -> None:
    fake = FakeFile(Look(CONTENT, data=b"[defaults]\ncpu = 7\n"))
    watcher = watcher_for(paths, fake, Config())  # the caller loaded an older file
    taken = [c for c in settle(watcher, 0.0) if c is not None]
    assert taken and taken[0].defaults.cpu == 7


def test_a_bad_file_at_start_is_reported_by_the_first_settle(paths: Paths) -> None:
    fake = FakeFile(Look(CONTENT, data=b"[defaults]\ncpu = 0\n"))
    watcher = watcher_for(paths, fake, Config())
    settle(watcher, 0.0)
    assert watcher.error is not None and "`[defaults] cpu`" in watcher.error


def test_look_at_the_real_file(paths: Paths, tmp_path: Path) -> None:
    assert look_at(paths.config_file).kind == MISSING
    paths.config_file.parent.mkdir()
    paths.config_file.write_text("[budget]\ncpu = 2\n")
    look = look_at(paths.config_file)
    assert look.kind == CONTENT and look.data == b"[budget]\ncpu = 2\n"
    paths.config_file.unlink()
    os.mkfifo(paths.config_file)
    fifo = look_at(paths.config_file)  # must return at once, not wait for a writer
    assert fifo.kind == NOT_REGULAR and "FIFO" in fifo.detail
    paths.config_file.unlink()
    paths.config_file.mkdir()
    assert look_at(paths.config_file).kind == NOT_REGULAR
    assert look_at(tmp_path / "no" / "such" / "file").kind == MISSING


def test_the_real_reader_drives_a_watcher(paths: Paths) -> None:
    paths.config_file.parent.mkdir()
    paths.config_file.write_text("[defaults]\ncpu = 2\n")
    initial = Config(defaults=type(Config().defaults)(cpu=2))
    watcher = ConfigWatcher(paths, initial)
    assert watcher.check(0.0) is None and not watcher.settling
    tmp = paths.config_file.with_suffix(".new")
    tmp.write_text("[defaults]\ncpu = 3\n")
    os.replace(tmp, paths.config_file)
    taken = [c for c in settle(watcher, 1.0) if c is not None]
    assert taken and taken[0].defaults.cpu == 3
