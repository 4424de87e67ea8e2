"""`qex config init` and `qex config set`: files that the strict parser accepts, or nothing."""

from __future__ import annotations

import tomllib
from pathlib import Path

from conftest import Env


def fake_gpus(root: Path) -> Path:
    """A sysfs tree with two AMD cards that report their VRAM and a BMC's VGA chip."""
    base = root / "sys" / "bus" / "pci" / "devices"
    for address, vendor, cls, vram in (("0000:03:00.0", "0x1002", "0x030000", "17163091968"),
                                       ("0000:04:00.0", "0x1002", "0x030000", "17163091968"),
                                       ("0000:05:00.0", "0x1a03", "0x030000", None)):
        device = base / address
        device.mkdir(parents=True)
        (device / "vendor").write_text(vendor + "\n")
        (device / "device").write_text("0x744c\n")
        (device / "class").write_text(cls + "\n")
        if vram:
            (device / "mem_info_vram_total").write_text(vram + "\n")
    return root / "sys"


def test_init_writes_a_starter_that_config_show_accepts(qex_env: Env) -> None:
    sys_root = fake_gpus(qex_env.root)
    made = qex_env.run("config", "init", "--sysfs", str(sys_root))
    assert made.returncode == 0, made.stderr
    assert f"wrote {qex_env.config}" in made.stdout
    data = tomllib.loads(qex_env.config.read_text())
    cores = int(qex_env.run("config", "show", "--json", check=True).stdout.split(
        '"cores": ')[1].split(",")[0])
    assert data["budget"] == {"cpu": cores, "mem": "80%"}
    assert data["enforce"]["mode"] in ("off", "hard")
    assert data["pool"] == [{"name": "gpu", "size": "vram", "devices": ["16GB", "16GB"],
                             "env": "HIP_VISIBLE_DEVICES"}]
    assert "1 GPU pool(s): gpu with 2 device(s)" in made.stderr
    assert qex_env.run("config", "show").returncode == 0
    again = qex_env.run("config", "init")
    assert again.returncode == 1 and "exists already" in again.stderr
    assert tomllib.loads(qex_env.config.read_text()) == data  # untouched


def test_set_changes_one_key_and_keeps_a_commented_file(qex_env: Env) -> None:
    qex_env.write_config("# my notes\n[budget]\ncpu = 1\n")
    done = qex_env.run("config", "set", "budget.mem", "70%")
    assert done.returncode == 0, done.stderr
    assert tomllib.loads(qex_env.config.read_text()) == {"budget": {"cpu": 1, "mem": "70%"}}
    backup = qex_env.config.with_name("qex.toml.bak")
    assert backup.read_text() == "# my notes\n[budget]\ncpu = 1\n"
    assert "comments" in done.stderr and str(backup) in done.stderr
    typed = qex_env.run("config", "set", "enforce.mem_overcommit", "1.25")
    assert typed.returncode == 0, typed.stderr
    assert tomllib.loads(qex_env.config.read_text())["enforce"]["mem_overcommit"] == 1.25


def test_set_refuses_what_the_parser_refuses_and_changes_nothing(qex_env: Env) -> None:
    qex_env.write_config("[budget]\ncpu = 1\n")
    for args, words in ((("budget.cpu", "0"), "1 core or more"),
                        (("enforce.mode", "sometimes"), '"off", "soft", "hard"'),
                        (("budget.bogus", "3"), "`bogus`"),
                        (("pool.name", "x"), "qex pool suggest"),
                        (("a.b.c", "1"), "SECTION.KEY")):
        proc = qex_env.run("config", "set", *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert words in proc.stderr and "was not changed" in proc.stderr, proc.stderr
        assert proc.stderr.count("\n") == 1
    assert qex_env.config.read_text() == "[budget]\ncpu = 1\n"
    assert not qex_env.config.with_name("qex.toml.bak").exists()


def test_set_creates_the_file(qex_env: Env) -> None:
    proc = qex_env.run("config", "set", "enforce.mode", "soft")
    assert proc.returncode == 0, proc.stderr
    assert tomllib.loads(qex_env.config.read_text()) == {"enforce": {"mode": "soft"}}
