"""`qex.toml`: every key parsed and validated, unknown names refused, and the dict round trip."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

from qex.core.config import BudgetValue, Config, ConfigError, Machine, Pool
from qex.core.config_parse import config_to_dict, parse_config
from qex.core.units import GIB, KIB, MIB
from qex.store.config_file import load_config
from qex.store.paths import Paths

SRC = "/home/u/.config/qex.toml"


def cfg(text: str) -> Config:
    return parse_config(tomllib.loads(text), SRC)


def refused(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        cfg(text)
    message = str(info.value)
    assert SRC in message
    return message


def test_empty_file_is_the_defaults() -> None:
    config = cfg("")
    assert config == Config()
    assert config.enforce.mode == "off"
    assert config.enforce.mem_overcommit == 1.5
    assert config.enforce.use_systemd is True
    assert config.retry.on_oom == 2 and config.retry.growth == 2.0
    assert config.peers.enabled is True
    assert config.system.reserve_mem == 2 * GIB
    machine = Machine(cores=16, mem_total=32 * GIB)
    assert config.cpu_budget(machine) == 12
    assert config.mem_budget(machine) == 24 * GIB
    assert config.defaults.default_mem(machine) == 2 * GIB


def test_the_full_example_of_the_config_page() -> None:
    config = cfg("""
[budget]
cpu = "75%"
mem = "75%"
[system]
reserve_mem = "2GB"
max_pressure = 20
[enforce]
mode = "off"
mem_overcommit = 1.5
use_systemd = true
[peers]
enabled = true
dir = "/tmp/qex"
stale_after = "30s"
[queue]
oversized = "run-when-idle"
settle = "3s"
max_bypass = 2
[politeness]
nice = 10
io = "none"
oom_score_adj = 0
[submit]
env_capture = "all"
minimal_env = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TZ"]
[claims]
export_env = true
also = []
[learn]
enabled = true
margin = 1.5
[logs]
max_bytes = "32MB"
[retry]
on_oom = 2
growth = 2.0
[history]
keep = "1d"
[gc]
keep = "1d"
[defaults]
cpu = 1
mem = "2GB"
timeout = "0"
max_queue_time = "0"
vram = "0"
[[pool]]
name = "gpu"
size = "vram"
devices = ["24GB", "24GB", "24GB", "24GB"]
env = "CUDA_VISIBLE_DEVICES"
[[pool]]
name = "net"
count = 4
[hooks]
on_stop = []
on_stop_states = ["completed", "failed", "killed", "timeout", "expired", "oom"]
timeout = "30s"
""")
    assert config.defaults.mem == 2 * GIB
    assert config.defaults.timeout is None and config.defaults.vram is None
    assert config.pools == (
        Pool(name="gpu", devices=(24 * GIB,) * 4, size="vram", env="CUDA_VISIBLE_DEVICES"),
        Pool(name="net", count=4),
    )
    assert config.logs.max_bytes == 32 * MIB


@pytest.mark.parametrize(
    ("bare", "quoted"),
    [
        ("[budget]\ncpu = 2", '[budget]\ncpu = "2"'),
        ("[learn]\nmargin = 1.5", '[learn]\nmargin = "1.5"'),
        ("[system]\nreserve_mem = 1073741824", '[system]\nreserve_mem = "1GB"'),
        ("[queue]\nsettle = 5", '[queue]\nsettle = "5s"'),
        ("[politeness]\nnice = -5", '[politeness]\nnice = "-5"'),
        ("[retry]\non_oom = 3", '[retry]\non_oom = "3"'),
        ("[defaults]\ncpu = 2", '[defaults]\ncpu = "2"'),
        ("[system]\nmax_pressure = 40", '[system]\nmax_pressure = "40"'),
    ],
)
def test_quotation_marks_change_nothing(bare: str, quoted: str) -> None:
    assert cfg(bare) == cfg(quoted)


def test_budget_forms() -> None:
    assert cfg('[budget]\ncpu = "50%"\nmem = "25%"').budget.cpu == BudgetValue(fraction=0.5)
    assert cfg("[budget]\ncpu = 3").budget.cpu == BudgetValue(absolute=3)
    assert cfg('[budget]\nmem = "16GB"').budget.mem == BudgetValue(absolute=16 * GIB)
    assert "above 0%" in refused('[budget]\ncpu = "150%"')
    assert "above 0%" in refused('[budget]\ncpu = "0%"')
    assert "1 core or more" in refused("[budget]\ncpu = 0")
    assert "64MB" in refused('[budget]\nmem = "16"')
    assert "whole number" in refused('[budget]\ncpu = "2.5"')


def test_defaults_cpu_takes_a_whole_number_only_and_says_why() -> None:
    message = refused('[defaults]\ncpu = "50%"')
    assert "`[defaults] cpu`" in message and "ONE job" in message and "[budget] cpu" in message
    assert "1 or more" in refused("[defaults]\ncpu = 0")
    assert "ONE job" in refused('[defaults]\nmem = "10%"')
    assert cfg("[defaults]\ncpu = 4").defaults.cpu == 4


def test_defaults_durations_and_vram() -> None:
    config = cfg('[defaults]\ntimeout = "4h"\nmax_queue_time = "30m"\nvram = "20GB"\nmem = "3GB"')
    assert config.defaults.timeout == 14400.0
    assert config.defaults.max_queue_time == 1800.0
    assert config.defaults.vram == 20 * GIB
    assert config.defaults.mem == 3 * GIB
    assert cfg('[defaults]\ntimeout = "never"').defaults.timeout is None
    assert "is wrong" in refused('[defaults]\ntimeout = "soon"')


@pytest.mark.parametrize("word", ['"0"', "0", '"none"', '"never"', '"unlimited"', '"Unlimited"'])
def test_log_limit_off(word: str) -> None:
    assert cfg(f"[logs]\nmax_bytes = {word}").logs.max_bytes is None


def test_log_limit_below_16kb_quotes_both_numbers() -> None:
    message = refused('[logs]\nmax_bytes = "15KB"')
    assert str(15 * KIB) in message and str(16 * KIB) in message
    assert cfg('[logs]\nmax_bytes = "16KB"').logs.max_bytes == 16 * KIB


def test_enforce_and_retry_ranges() -> None:
    assert cfg('[enforce]\nmode = "HARD"').enforce.mode == "hard"
    assert '"off", "soft", "hard"' in refused('[enforce]\nmode = "strict"')
    assert "1 or more" in refused("[enforce]\nmem_overcommit = 0.5")
    assert cfg("[enforce]\nmem_overcommit = 1").enforce.mem_overcommit == 1
    assert "above 1" in refused("[retry]\ngrowth = 1")
    assert (
        cfg("[retry]\ngrowth = 1.25\non_oom = 0").retry
        == cfg('[retry]\ngrowth = "1.25"\non_oom = "0"').retry
    )
    assert "0 or more" in refused("[retry]\non_oom = -1")
    assert "true or false" in refused('[enforce]\nuse_systemd = "yes"')


def noted(text: str) -> str:
    """A politeness fault: the defaults, and one note that names the key and the remedy."""
    config = cfg(text)
    assert config.politeness == Config().politeness
    assert len(config.notes) == 1 and SRC in config.notes[0]
    assert "default politeness" in config.notes[0]
    return config.notes[0]


def test_learn_margin_and_politeness_ranges() -> None:
    assert "1 or more" in refused("[learn]\nmargin = 0.9")
    assert "-20 to 19" in noted("[politeness]\nnice = 20")
    assert "-1000 to 1000" in noted("[politeness]\noom_score_adj = 1001")
    assert cfg('[politeness]\nio = "idle"').politeness.io == "idle"
    assert "best-effort" in noted('[politeness]\nio = "low"')
    assert "0 to 100" in refused("[system]\nmax_pressure = 101")


def test_peers_queue_history() -> None:
    config = cfg(
        '[peers]\nenabled = false\ndir = "/var/tmp/q"\nstale_after = "0"\n'
        '[queue]\noversized = "reject"\nsettle = "0"\nmax_bypass = 0\n'
        '[history]\nkeep = 0\n[gc]\nkeep = "2d"'
    )
    assert config.peers == type(config.peers)(enabled=False, dir="/var/tmp/q", stale_after=30.0)
    assert config.queue.oversized == "reject" and config.queue.settle == 0.0
    assert config.queue.max_bypass == 0
    assert config.history.keep == 86400.0 and config.gc.keep == 172800.0
    assert "absolute path" in refused('[peers]\ndir = "relative/dir"')
    assert "run-when-idle" in refused('[queue]\noversized = "always"')


def test_submit_and_claims() -> None:
    config = cfg(
        '[submit]\nenv_capture = "minimal"\nminimal_env = ["PATH", "TERM"]\n'
        '[claims]\nalso = ["java", "make"]'
    )
    assert config.submit.minimal_env == ("PATH", "TERM")
    assert config.claims.also == ("java", "make")
    message = refused('[claims]\nalso = ["python"]')
    assert "java" in message and "make" in message and "python" in message
    assert "list" in refused('[claims]\nalso = "java"')
    assert "variable name" in refused('[submit]\nminimal_env = ["A=B"]')


def test_hooks() -> None:
    config = cfg(
        '[hooks]\non_stop = ["/usr/bin/notify-send", "done"]\n'
        'on_stop_states = ["failed", "Canceled", "skipped"]\ntimeout = "0"'
    )
    assert config.hooks.on_stop == ("/usr/bin/notify-send", "done")
    assert config.hooks.on_stop_states == ("failed", "cancelled", "skipped")
    assert config.hooks.timeout == 30.0
    message = refused('[hooks]\non_stop_states = ["running"]')
    assert "final state" in message and "cancelled, skipped" in message
    assert "qex starts no shell" in refused('[hooks]\non_stop = "notify-send done"')
    assert "empty program" in refused('[hooks]\non_stop = ["", "x"]')


def test_pool_rules() -> None:
    assert "exactly one of `count`" in refused(
        '[[pool]]\nname = "gpu"\ncount = 2\ndevices = ["8GB"]'
    )
    assert "exactly one of `count`" in refused('[[pool]]\nname = "gpu"')
    assert "has no name" in refused("[[pool]]\ncount = 2")
    assert "has no name" in refused('[[pool]]\nname = ""\ncount = 2')
    assert "reserved" in refused('[[pool]]\nname = "mem"\ncount = 2')
    assert "twice" in refused(
        '[[pool]]\nname = "net"\ncount = 2\n[[pool]]\nname = "net"\ncount = 3'
    )
    assert "two brackets" in refused('[pool]\nname = "net"\ncount = 2')
    assert "1 or more" in refused('[[pool]]\nname = "net"\ncount = 0')
    assert "is wrong" in refused('[[pool]]\nname = "gpu"\ndevices = ["lots"]')
    assert "one capacity for each device" in refused('[[pool]]\nname = "gpu"\ndevices = []')
    assert "environment variable" in refused(
        '[[pool]]\nname = "gpu"\ndevices = ["8GB"]\nenv = "NOT VALID"'
    )
    assert "devices only" in refused('[[pool]]\nname = "net"\ncount = 2\nenv = "X"')
    assert "did you mean `devices`" in refused('[[pool]]\nname = "gpu"\ndevice = ["8GB"]')
    pool = cfg('[[pool]]\nname = "tpu"\ndevices = [1073741824, "2GB"]').pools[0]
    assert pool.devices == (GIB, 2 * GIB) and pool.indexed and pool.total == 2


def test_a_misspelt_key_is_named_with_a_suggestion() -> None:
    message = refused("[budget]\ncpus = 2")
    assert "`cpus`" in message and "did you mean `cpu`" in message
    message = refused("[budgte]\ncpu = 2")
    assert "`budgte`" in message and "[budget]" in message
    message = refused("[enforce]\nmem_overcomit = 2")
    assert "did you mean `mem_overcommit`" in message


def test_a_key_in_the_wrong_place_is_sent_to_its_section() -> None:
    assert "belongs in [system]" in refused('[budget]\nreserve_mem = "1GB"')
    assert "belongs in [system]" in refused('reserve_mem = "1GB"')
    assert "[budget] or [defaults]" in refused("cpu = 2")


def test_sections_that_are_not_ours_are_refused() -> None:
    message = refused('[telemetry]\ncheck = "7d"')
    assert "`telemetry`" in message and "[[pool]]" in message
    assert "must be a section" in refused("budget = 3")


def test_the_dict_shows_percentages_as_people_write_them() -> None:
    data = config_to_dict(cfg('[budget]\ncpu = "50%"\nmem = "12.5%"'))
    assert data["budget"] == {"cpu": "50%", "mem": "12.5%"}
    assert config_to_dict(cfg("[budget]\ncpu = 3"))["budget"]["cpu"] == 3
    assert config_to_dict(cfg('[logs]\nmax_bytes = "never"'))["logs"]["max_bytes"] == "unlimited"


def test_round_trip_of_the_defaults_through_json_and_toml() -> None:
    data = config_to_dict(Config())
    assert parse_config(json.loads(json.dumps(data)), "json") == Config()
    assert parse_config(tomllib.loads(tomli_w.dumps(data)), "toml") == Config()


def _random_config_text() -> st.SearchStrategy[dict[str, Any]]:
    sizes = st.integers(min_value=64 * MIB, max_value=2**45)
    percent = st.integers(min_value=1, max_value=1000).map(lambda n: f"{n / 10:g}%")
    duration = st.one_of(st.just("0"), st.integers(1, 10**6).map(lambda n: f"{n}s"))
    pool = st.one_of(
        st.fixed_dictionaries({"count": st.integers(1, 64)}),
        st.fixed_dictionaries(
            {"devices": st.lists(st.integers(1, 2**40), min_size=1, max_size=8)},
            optional={"size": st.just("vram"), "env": st.just("CUDA_VISIBLE_DEVICES")},
        ),
    )
    return st.fixed_dictionaries(
        {},
        optional={
            "budget": st.fixed_dictionaries(
                {},
                optional={
                    "cpu": st.one_of(percent, st.integers(1, 512)),
                    "mem": st.one_of(percent, sizes),
                },
            ),
            "system": st.fixed_dictionaries(
                {},
                optional={"reserve_mem": st.integers(0, 2**40), "max_pressure": st.floats(0, 100)},
            ),
            "enforce": st.fixed_dictionaries(
                {},
                optional={
                    "mode": st.sampled_from(["off", "soft", "hard"]),
                    "mem_overcommit": st.floats(1, 10),
                    "use_systemd": st.booleans(),
                },
            ),
            "queue": st.fixed_dictionaries(
                {},
                optional={
                    "oversized": st.sampled_from(["run-when-idle", "reject", "queue"]),
                    "settle": duration,
                    "max_bypass": st.integers(0, 50),
                },
            ),
            "politeness": st.fixed_dictionaries(
                {},
                optional={
                    "nice": st.integers(-20, 19),
                    "io": st.sampled_from(["none", "best-effort", "idle"]),
                    "oom_score_adj": st.integers(-1000, 1000),
                },
            ),
            "logs": st.fixed_dictionaries(
                {},
                optional={
                    "max_bytes": st.one_of(st.just("unlimited"), st.integers(16 * KIB, 2**40))
                },
            ),
            "retry": st.fixed_dictionaries(
                {}, optional={"on_oom": st.integers(0, 9), "growth": st.floats(1.01, 8)}
            ),
            "learn": st.fixed_dictionaries(
                {}, optional={"margin": st.floats(1, 5), "enabled": st.booleans()}
            ),
            "defaults": st.fixed_dictionaries(
                {},
                optional={
                    "cpu": st.integers(1, 64),
                    "mem": st.integers(1, 2**40),
                    "timeout": duration,
                    "max_queue_time": duration,
                    "vram": st.integers(0, 2**36),
                },
            ),
            "hooks": st.fixed_dictionaries(
                {},
                optional={
                    "on_stop": st.lists(
                        st.text(min_size=1, max_size=8).filter(lambda t: "\0" not in t), max_size=3
                    ),
                    "on_stop_states": st.lists(
                        st.sampled_from(["completed", "failed", "oom", "skipped"]), max_size=4
                    ),
                    "timeout": duration,
                },
            ),
            "pool": st.lists(pool, max_size=3).map(
                lambda pools: [{"name": f"p{i}", **p} for i, p in enumerate(pools)]
            ),
        },
    )


@settings(max_examples=200)
@given(_random_config_text())
def test_config_to_dict_round_trips(data: dict[str, Any]) -> None:
    config = parse_config(data, "generated")
    again = config_to_dict(config)
    assert parse_config(again, "again") == config
    assert parse_config(json.loads(json.dumps(again)), "json") == config
    assert parse_config(tomllib.loads(tomli_w.dumps(again)), "toml") == config


def _paths(tmp_path: Path) -> Paths:
    return Paths.from_env({"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "c")})


def test_load_config_from_disk(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    assert load_config(paths) == Config()  # no file: the defaults
    paths.config_file.parent.mkdir()
    paths.config_file.write_text("[budget]\ncpu = 2\n")
    assert load_config(paths).budget.cpu.absolute == 2


def test_load_config_names_the_toml_line(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    paths.config_file.parent.mkdir()
    paths.config_file.write_text("[budget]\ncpu = \n")
    with pytest.raises(ConfigError, match=r"not valid TOML: invalid value at line 2, column 7"):
        load_config(paths)


def test_load_config_refuses_text_that_is_not_utf8(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    paths.config_file.parent.mkdir()
    paths.config_file.write_bytes(b"[budget]\ncpu = 2\n# caf\xe9\n")
    with pytest.raises(ConfigError, match=r"not text.*line 3"):
        load_config(paths)


def test_load_config_refuses_a_directory_and_follows_a_link(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    paths.config_file.mkdir(parents=True)
    with pytest.raises(ConfigError, match="a directory, not a regular file"):
        load_config(paths)
    paths.config_file.rmdir()
    real = tmp_path / "real.toml"
    real.write_text("[defaults]\ncpu = 3\n")
    os.symlink(real, paths.config_file)
    assert load_config(paths).defaults.cpu == 3


def test_load_config_never_opens_a_fifo(tmp_path: Path) -> None:
    import threading

    paths = _paths(tmp_path)
    paths.config_file.parent.mkdir()
    os.mkfifo(paths.config_file)
    outcome: list[str] = []

    def attempt() -> None:
        try:
            load_config(paths)
        except ConfigError as exc:
            outcome.append(str(exc))

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():  # pragma: no cover - the bug this test exists for
        with open(paths.config_file, "wb"):
            pass  # release the blocked open so the thread can end
        pytest.fail("load_config blocked on a FIFO")
    assert outcome and "FIFO" in outcome[0] and "not a regular file" in outcome[0]


def test_the_earlier_qex_settings_give_one_note_and_no_refusal() -> None:
    config = parse_config({"update": {"check": "7d", "url": "https://x"},
                           "enforce": {"mode": "single-user"}, "budget": {"cpu": 2}}, "f.toml")
    assert config.enforce.mode == "off" and config.budget.cpu.absolute == 2
    assert len(config.notes) == 1
    assert "[update] (check, url)" in config.notes[0]
    assert '[enforce] mode = "single-user"' in config.notes[0]
    assert parse_config({"budget": {"cpu": 2}}, "f.toml").notes == ()
    with pytest.raises(ConfigError, match="chek"):
        parse_config({"update": {"chek": "7d"}}, "f.toml")
    with pytest.raises(ConfigError, match="updates"):
        parse_config({"updates": {}}, "f.toml")


def test_sections_are_read_off_the_config_record() -> None:
    """Every field of every `Config` section is a known key, and nothing else is."""
    from qex.core.config import Config
    from qex.core.config_reader import SECTIONS
    from qex.core.model import fields, is_record

    sections = {f.name: f.value() for f in fields(Config) if is_record(f.value())}
    assert set(sections) | {"pools", "notes"} == {f.name for f in fields(Config)}
    assert set(SECTIONS) == set(sections)
    for name, section in sections.items():
        assert SECTIONS[name] == tuple(f.name for f in fields(section))
