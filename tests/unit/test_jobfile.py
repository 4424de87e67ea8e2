"""Job files and pipeline files: every field, every refusal, and the three formats."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from qex.core.jobfile import (
    UNSET,
    JobFile,
    JobFileError,
    parse_job_file,
    parse_pipeline,
)
from qex.core.records import PoolClaim
from qex.core.units import GIB
from qex.store.structured import StructuredError, file_format, read_structured

FULL = """
name = "train-model"
cwd = "/home/me/project"
command = ["uv", "run", "train.py", "--epochs", "50"]
timeout = "4h"
max_queue_time = "30m"
tags = ["ml"]
priority = 3
needs = ["build"]
after = ["cleanup"]
env_capture = "minimal"
nice = 10
no_limit_env_hints = true
dedupe_key = " train:p1 "
dedupe_window = "1h"
locks = ["db", "net:2"]
retries = 2

[resources]
cpu = 3
mem = "8GB"
gpu = 2
vram = "20GB"

[resources.claims]
net = 1
tpu = { count = 2, size = "8GB" }

[env]
HF_HOME = "/data/hf"
SEED = 7
"""


def job(text: str, source: str = "/src/job.toml") -> JobFile:
    return parse_job_file(tomllib.loads(text), source)


def job_refused(text: str) -> str:
    with pytest.raises(JobFileError) as info:
        job(text)
    assert "/src/job.toml" in str(info.value)
    return str(info.value)


def test_every_field_of_a_job_file() -> None:
    jf = job(FULL)
    assert jf.name == "train-model" and jf.cwd == "/home/me/project"
    assert jf.command == ("uv", "run", "train.py", "--epochs", "50")
    assert jf.timeout == 14400.0 and jf.max_queue_time == 1800.0
    assert jf.tags == ("ml",) and jf.priority == 3
    assert jf.needs == ("build",) and jf.after == ("cleanup",)
    assert jf.env_capture == "minimal" and jf.nice == 10 and jf.no_limit_env_hints is True
    assert jf.dedupe_key == "train:p1" and jf.dedupe_window == 3600.0
    assert jf.locks == ("db", "net:2") and jf.retries == 2
    assert jf.resources.cpu == 3 and jf.resources.mem == 8 * GIB
    assert jf.resources.gpu == 2 and jf.resources.vram == 20 * GIB
    assert jf.resources.claims == {"net": PoolClaim(1), "tpu": PoolClaim(2, 8 * GIB)}
    assert jf.env == {"HF_HOME": "/data/hf", "SEED": "7"}
    assert jf.base_dir == "/src"


def test_a_minimal_file_leaves_everything_unset() -> None:
    jf = job('command = ["make"]')
    assert jf.command == ("make",)
    assert jf.timeout is UNSET and jf.max_queue_time is UNSET
    assert jf.resources.vram is UNSET and jf.resources.cpu is None
    assert jf.dedupe_key is None and jf.dedupe_window is None
    assert job("").command is None  # the command may come after `--`


def test_limits_of_zero_mean_no_limit_and_are_not_unset() -> None:
    jf = job('command = ["x"]\ntimeout = "0"\nmax_queue_time = "never"\n[resources]\nvram = "0"')
    assert jf.timeout is None and jf.max_queue_time is None and jf.resources.vram is None


def test_claim_words_and_quoted_numbers() -> None:
    jf = job('[resources]\ncpu = "guess"\nmem = "FULL"')
    assert jf.resources.cpu == "half" and jf.resources.mem == "full"
    assert job('[resources]\ncpu = "2"\nmem = 1024').resources.cpu == 2
    assert "1 core or more" in job_refused("[resources]\ncpu = 0")
    assert "1 byte of memory or more" in job_refused('[resources]\nmem = "0"')
    assert "whole number of cores" in job_refused('[resources]\ncpu = "lots"')


def test_a_misspelt_field_is_named_with_a_suggestion_and_an_example() -> None:
    message = job_refused('comand = ["make"]')
    assert "`comand`" in message and "did you mean `command`" in message
    assert 'command = ["make", "test"]' in message
    message = job_refused('[resources]\nmemory = "4GB"')
    assert "`memory`" in message and "did you mean `mem`" in message


def test_a_command_as_one_string_is_refused_with_the_list_form() -> None:
    message = job_refused('command = "make test"')
    assert "no shell" in message and '["make", "test"]' in message
    assert "non-empty list" in job_refused("command = []")
    assert "empty program" in job_refused('command = ["", "x"]')


def test_field_checks() -> None:
    assert "-20 to 19" in job_refused("nice = 25")
    assert "0 or more" in job_refused("retries = -1")
    assert "all, minimal or none" in job_refused('env_capture = "some"')
    assert "true or false" in job_refused('no_limit_env_hints = "yes"')
    assert "needs a `dedupe_key`" in job_refused('dedupe_window = "1h"')
    assert "is empty" in job_refused('dedupe_key = "   "')
    assert "a name holds only" in job_refused('name = "my job"')
    assert "a name holds only" in job_refused('name = "0b5a3c1e-0000-4000-8000-000000000000"')
    assert "control character" in job_refused('tags = ["a\\u001bb"]')
    assert "quotation marks" in job_refused("[env]\nFLAG = true")
    assert "pipeline file" in job_refused('[[jobs]]\nname = "a"\ncommand = ["x"]')


def test_resource_claims() -> None:
    assert "reserved" in job_refused("[resources.claims]\nmem = 1")
    assert "1 unit or more" in job_refused("[resources.claims]\nnet = 0")
    assert "count" in job_refused('[resources.claims]\ntpu = { size = "8GB" }')
    assert "once" in job_refused("[resources]\ngpu = 1\n[resources.claims]\ngpu = 2")
    assert "not a name qex accepts" in job_refused('[resources.claims]\n"a b" = 1')


def test_single_words_are_lists_of_one() -> None:
    jf = job('needs = "build"\ntags = "ml"\nlocks = "db"')
    assert jf.needs == ("build",) and jf.tags == ("ml",) and jf.locks == ("db",)


PIPELINE = """
name = "ci"

[[jobs]]
name = "ship"
command = ["./deploy.sh"]
needs = ["unit", "lint"]

[[jobs]]
name = "build"
command = ["make"]

[[jobs]]
name = "unit"
command = ["make", "test"]
needs = ["build"]

[[jobs]]
name = "lint"
command = ["make", "lint"]
needs = ["build"]
[jobs.resources]
cpu = 4
mem = "16GB"
gpu = 1

[[jobs]]
name = "cleanup"
command = ["./clean.sh"]
after = ["ship"]
"""


def pipeline_refused(text: str) -> str:
    with pytest.raises(JobFileError) as info:
        parse_pipeline(tomllib.loads(text), "ci.toml")
    assert "ci.toml" in str(info.value)
    return str(info.value)


def test_a_pipeline_and_its_order() -> None:
    pipe = parse_pipeline(tomllib.loads(PIPELINE), "ci.toml")
    assert pipe.name == "ci"
    assert [s.name for s in pipe.stages] == ["ship", "build", "unit", "lint", "cleanup"]
    assert [s.name for s in pipe.topological_order()] == [
        "build",
        "unit",
        "lint",
        "ship",
        "cleanup",
    ]
    assert pipe.stage("lint").resources.gpu == 1
    with pytest.raises(KeyError):
        pipe.stage("deploy")


def test_a_long_chain_does_not_hit_the_recursion_limit() -> None:
    count = 3000
    jobs = [
        {"name": f"s{i}", "command": ["x"], "needs": [f"s{i + 1}"] if i + 1 < count else []}
        for i in range(count)
    ]
    order = parse_pipeline({"jobs": jobs}, "big.json").topological_order()
    assert order[0].name == f"s{count - 1}" and order[-1].name == "s0"


def test_a_circle_is_refused_and_shown() -> None:
    message = pipeline_refused(
        '[[jobs]]\nname = "a"\ncommand = ["x"]\nneeds = ["b"]\n'
        '[[jobs]]\nname = "b"\ncommand = ["x"]\nneeds = ["c"]\n'
        '[[jobs]]\nname = "c"\ncommand = ["x"]\nafter = ["a"]\n'
    )
    assert "a -> b -> c -> a" in message
    assert "x -> x" in pipeline_refused('[[jobs]]\nname = "x"\ncommand = ["x"]\nneeds = ["x"]')


def test_pipeline_refusals() -> None:
    assert "no stage of that name" in pipeline_refused(
        '[[jobs]]\nname = "a"\ncommand = ["x"]\nneeds = ["b"]'
    )
    assert "two stages named `a`" in pipeline_refused(
        '[[jobs]]\nname = "a"\ncommand = ["x"]\n[[jobs]]\nname = "a"\ncommand = ["y"]'
    )
    assert "no dedupe key" in pipeline_refused(
        '[[jobs]]\nname = "a"\ncommand = ["x"]\ndedupe_key = "k"'
    )
    assert "has no command" in pipeline_refused('[[jobs]]\nname = "a"')
    assert "has no name" in pipeline_refused('[[jobs]]\ncommand = ["x"]')
    assert "has no [[jobs]]" in pipeline_refused('name = "ci"')
    assert "job file" in pipeline_refused('command = ["x"]')
    assert "did you mean `needs`" in pipeline_refused(
        '[[jobs]]\nname = "a"\ncommand = ["x"]\nneed = ["b"]'
    )
    assert "did you mean `jobs`" in pipeline_refused('[[job]]\nname = "a"\ncommand = ["x"]')
    assert "a name holds only" in pipeline_refused('[[jobs]]\nname = "a b"\ncommand = ["x"]')
    assert "is not one qex accepts" in pipeline_refused(
        'name = "c i"\n[[jobs]]\nname = "a"\ncommand = ["x"]'
    )


def test_formats_are_chosen_by_extension(tmp_path: Path) -> None:
    assert file_format(Path("a.yml")) == "yaml" and file_format(Path("a.YAML")) == "yaml"
    assert file_format(Path("a.json")) == "json" and file_format(Path("a")) == "toml"
    toml_file = tmp_path / "job.toml"
    toml_file.write_text('command = ["make"]\n[resources]\ncpu = 2\n')
    yaml_file = tmp_path / "job.yaml"
    yaml_file.write_text("command: [make]\nresources:\n  cpu: 2\n")
    json_file = tmp_path / "job.json"
    json_file.write_text(json.dumps({"command": ["make"], "resources": {"cpu": 2}}))
    results = {
        parse_job_file(read_structured(p), str(p)).resources.cpu
        for p in (toml_file, yaml_file, json_file)
    }
    assert results == {2}


def test_structured_errors_name_the_file_and_line(tmp_path: Path) -> None:
    cases: dict[str, tuple[str | bytes, str]] = {
        "bad.toml": ('command = ["make"\n', "not valid TOML"),
        "bad.yaml": ("command: [make\nx: 1\n", "not valid YAML"),
        "bad.json": ('{"command": ["make"],\n "x": }', "not valid JSON: expecting value at line 2"),
        "dup.json": ('{"name": "a", "name": "b"}', "appears twice"),
        "list.yaml": ("- a\n- b\n", "needs a table"),
        "latin.toml": (b'name = "caf\xe9"\n', "not UTF-8 text (a bad byte on line 1)"),
    }
    for name, (content, words) in cases.items():
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        with pytest.raises(StructuredError) as info:
            read_structured(path)
        assert words in str(info.value) and name in str(info.value), (name, str(info.value))
    line_two = tmp_path / "line2.toml"
    line_two.write_text('name = "x"\ncommand = [make]\n')
    with pytest.raises(StructuredError, match="at line 2, column"):
        read_structured(line_two)


def test_structured_refuses_a_directory_and_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(StructuredError, match="a directory"):
        read_structured(tmp_path)
    with pytest.raises(StructuredError, match="does not exist"):
        read_structured(tmp_path / "nope.toml")
    with pytest.raises(StructuredError, match="a device"):
        read_structured(Path(os.devnull))


def test_an_empty_file_is_an_empty_table(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert read_structured(empty) == {}


def test_load_helpers_name_the_path(tmp_path: Path) -> None:
    from qex.store.structured import load_job_file, load_pipeline

    job_path = tmp_path / "job.yml"
    job_path.write_text("command: [make, test]\ntimout: 5m\n")
    with pytest.raises(JobFileError, match=r"job\.yml.*did you mean `timeout`"):
        load_job_file(job_path)
    job_path.write_text("command: [make, test]\ntimeout: 5m\n")
    assert load_job_file(job_path).timeout == 300.0
    pipe_path = tmp_path / "ci.json"
    pipe_path.write_text(json.dumps({"jobs": [{"name": "a", "command": ["x"]}]}))
    assert [s.name for s in load_pipeline(pipe_path).stages] == ["a"]
