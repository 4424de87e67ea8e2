"""`qex config show` and `qex config path`, run as the real program against a private config."""

from __future__ import annotations

import json
import os

import pytest

from qex.platform.detect import detect
from tests.e2e.conftest import Env


def test_show_without_a_file_gives_the_defaults(qex_env: Env) -> None:
    proc = qex_env.run("config", "show")
    assert proc.returncode == 0, proc.stderr
    assert "absent; the default values apply" in proc.stdout
    for label in (
        "machine:",
        "budget:",
        "default job:",
        "queue limit:",
        "keep free:",
        "job output:",
        "politeness:",
        "retry:",
        "peers:",
        "oversized:",
        "environment:",
        "claim hints:",
        "stop hook:",
        "pools:",
        "enforcement:",
    ):
        assert label in proc.stdout, label
    assert "mode: off" in proc.stdout


def test_show_reads_and_explains_a_valid_file(qex_env: Env) -> None:
    qex_env.write_config(
        '[budget]\ncpu = 1\nmem = "1GB"\n'
        '[logs]\nmax_bytes = "none"\n'
        '[hooks]\non_stop = ["/usr/bin/true", "x"]\n'
        '[[pool]]\nname = "gpu"\nsize = "vram"\ndevices = ["24GB", "24GB"]\n'
        'env = "CUDA_VISIBLE_DEVICES"\n'
    )
    proc = qex_env.run("config", "show")
    assert proc.returncode == 0, proc.stderr
    assert f"{qex_env.config} (read)" in proc.stdout
    assert "budget:       1 core, 1GB of memory" in proc.stdout
    assert "NO LIMIT" in proc.stdout
    assert "/usr/bin/true (1 argument(s))" in proc.stdout
    assert "gpu: 2 device(s), 24GB vram each, sets CUDA_VISIBLE_DEVICES" in proc.stdout


def test_show_json_round_trips_and_has_the_enforcement_object(qex_env: Env) -> None:
    qex_env.write_config('[budget]\ncpu = "50%"\n[defaults]\ncpu = 2\n[enforce]\nmode = "soft"\n')
    proc = qex_env.run("config", "show", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["path"] == str(qex_env.config) and data["exists"] is True
    assert data["config"]["budget"]["cpu"] == "50%"
    assert data["config"]["defaults"]["cpu"] == 2
    assert data["resolved"]["default_cpu"] == 2
    assert data["resolved"]["peers_dir"] == qex_env.env["QEX_PEERS_DIR"]
    enforcement = data["enforcement"]
    assert set(enforcement) >= {"mode", "active", "reason", "fix", "capabilities"}
    assert enforcement["mode"] == "soft"
    # The JSON config is itself a valid config file.
    from qex.core.config_parse import parse_config

    assert parse_config(data["config"], "json").enforce.mode == "soft"


def test_a_misspelt_key_exits_1_and_names_it(qex_env: Env) -> None:
    qex_env.write_config("[budget]\ncpus = 2\n")
    proc = qex_env.run("config", "show")
    assert proc.returncode == 1
    assert proc.stderr.startswith("qex: ")
    assert "`cpus`" in proc.stderr and "did you mean `cpu`" in proc.stderr
    assert proc.stdout == ""


def test_a_fifo_at_the_config_path_does_not_hang(qex_env: Env) -> None:
    qex_env.config.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(qex_env.config)
    proc = qex_env.run("config", "show", timeout=20)
    assert proc.returncode == 1
    assert "FIFO" in proc.stderr and "not a regular file" in proc.stderr
    path = qex_env.run("config", "path", timeout=20)
    assert path.returncode == 0 and path.stdout.strip() == str(qex_env.config)
    assert "not a regular file" in path.stderr


def test_path_prints_the_path_and_notes_a_missing_file(qex_env: Env) -> None:
    proc = qex_env.run("config", "path")
    assert proc.returncode == 0
    assert proc.stdout.strip() == str(qex_env.config)
    assert "no file exists there yet" in proc.stderr
    qex_env.write_config("")
    proc = qex_env.run("config", "path")
    assert proc.stdout.strip() == str(qex_env.config) and proc.stderr == ""


def test_hard_mode_that_this_machine_cannot_enforce_says_not_active(qex_env: Env) -> None:
    if detect(use_systemd=True).enforcement_possible:
        pytest.skip("this machine can enforce limits, so NOT ACTIVE cannot be shown here")
    qex_env.write_config('[enforce]\nmode = "hard"\n')
    proc = qex_env.run("config", "show")
    assert proc.returncode == 0, proc.stderr
    line = next(line for line in proc.stdout.splitlines() if line.startswith("enforcement:"))
    assert "mode: hard — NOT ACTIVE: " in line and ". Fix: " in line
    data = json.loads(qex_env.run("config", "show", "--json").stdout)
    assert data["enforcement"]["active"] is False
    assert data["enforcement"]["reason"] and data["enforcement"]["fix"]
