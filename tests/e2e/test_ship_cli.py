"""What a new user meets first: a typo, the end of `submit --wait`, a GPU claim with no pool."""

from __future__ import annotations

import re

from conftest import Env


def test_a_misspelt_command_names_the_nearest_one(qex_env: Env) -> None:
    proc = qex_env.run("sumbit", "--", "true")
    assert proc.returncode == 2
    assert "there is no command `sumbit`; did you mean `qex submit`?" in proc.stderr
    far = qex_env.run("zzzzzz")
    assert far.returncode == 2 and "`qex --help` lists them all" in far.stderr


def test_submit_wait_says_how_many_lines_the_job_wrote(qex_env: Env) -> None:
    proc = qex_env.run("submit", "--wait", "--", "sh", "-c", "echo a; echo b; echo c >&2")
    assert proc.returncode == 0, proc.stderr
    found = re.search(r"the job wrote 3 lines \(2 on stdout, 1 on stderr\); read them with "
                      r"`qex logs ([0-9a-f-]+)`", proc.stderr)
    assert found, proc.stderr
    logs = qex_env.run("logs", found.group(1))
    assert "a\nb\n" in logs.stdout
    quiet = qex_env.run("submit", "--wait", "--", "true")
    assert "the job wrote no output" in quiet.stderr
    as_json = qex_env.run("submit", "--wait", "--json", "--", "echo", "x")
    assert "the job wrote" not in as_json.stderr


def test_the_missing_gpu_pool_error_names_the_real_config_file(qex_env: Env) -> None:
    proc = qex_env.run("submit", "--gpu", "1", "--", "true")
    assert proc.returncode != 0
    assert f"Declare the devices in {qex_env.config}, for example" in proc.stderr
    assert "~/.config/qex.toml" not in proc.stderr


def test_list_and_top_show_the_devices_a_job_holds(qex_env: Env) -> None:
    qex_env.write_config('[budget]\ncpu = 4\nmem = "90%"\n[defaults]\nmem = "64MB"\n'
                         '[[pool]]\nname = "gpu"\nsize = "vram"\ndevices = ["24GB", "24GB"]\n'
                         'env = "CUDA_VISIBLE_DEVICES"\n')
    gate = qex_env.root / "gate"
    job = qex_env.submit("--gpu", "2", "--", "sh", "-c",
                         'while [ ! -e "$1" ]; do sleep 0.05; done', "g", str(gate))
    try:
        qex_env.wait_for(lambda: qex_env.record(job)["state"] == "running", what="running")
        listed = qex_env.run("list", check=True).stdout
        assert "holds gpu 0,1" in listed
        assert "pool gpu: 2 unit(s) held by 1 job(s), devices 0,1" in listed
        top = qex_env.run("top", "--once", check=True).stdout
        assert "holds gpu 0,1" in top and "pool gpu: 2 of 2 in use" in top
    finally:
        gate.touch()
    assert qex_env.run("wait", job).returncode == 0
    assert "holds gpu" not in qex_env.run("list", check=True).stdout
