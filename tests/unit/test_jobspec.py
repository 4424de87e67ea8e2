"""Building a JobSpec: precedence, claims and their sources, hints, pools, names, dedupe."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qex.core.config import Config, Machine
from qex.core.config_parse import parse_config
from qex.core.hints import CPU_HINTS, apply_hints, claim_hints, rewrite_hints
from qex.core.jobfile import JobFile, parse_job_file, parse_pipeline
from qex.core.jobspec import (
    SpecError,
    SubmitOptions,
    build_spec,
    default_resolve_dir,
    stage_options,
)
from qex.core.model import replace
from qex.core.records import JobSpec
from qex.core.units import GIB, MIB, format_duration, format_size

MACHINE = Machine(cores=8, mem_total=16 * GIB)  # budget: 6 cores, 12GB
JOB_ID = "0b5a3c1e-1111-4000-8000-000000000000"
SHELL_ENV = {"PATH": "/usr/bin", "HOME": "/home/me", "SECRET": "s3cret", "OMP_NUM_THREADS": "1"}
DIRS = {"/work", "/work/sub", "/srv/jobs", "/srv/jobs/data", "/home/me/proj", "/elsewhere"}

POOLS = """
[[pool]]
name = "gpu"
size = "vram"
devices = ["24GB", "24GB"]
env = "CUDA_VISIBLE_DEVICES"

[[pool]]
name = "net"
count = 4
"""


def fake_dirs(path: str) -> str:
    normal = os.path.normpath(path)
    if normal not in DIRS:
        raise SpecError(f"the directory {path} does not exist")
    return normal


def config(text: str = "") -> Config:
    return parse_config(tomllib.loads(text), "test.toml")


def jobfile(text: str, source: str = "/srv/jobs/job.toml") -> JobFile:
    return parse_job_file(tomllib.loads(text), source)


def build(
    opts: SubmitOptions | None = None,
    jf: JobFile | None = None,
    *,
    cfg: Config | None = None,
    environ: dict[str, str] | None = None,
    learned: tuple[int | None, int | None] | None = None,
    learn_key: list[str] | None = None,
) -> tuple[JobSpec, list[str]]:
    return build_spec(
        opts or SubmitOptions(command=["make", "test"]),
        jf,
        config=cfg or config(),
        machine=MACHINE,
        environ=SHELL_ENV if environ is None else environ,
        shell_cwd="/work",
        learned=learned,
        job_id=JOB_ID,
        now=1700000000.0,
        learn_key=learn_key,
        resolve_dir=fake_dirs,
    )


def spec_of(**options: Any) -> JobSpec:
    options.setdefault("command", ["make", "test"])
    return build(SubmitOptions(**options))[0]


def refused(**options: Any) -> str:
    options.setdefault("command", ["make", "test"])
    with pytest.raises(SpecError) as info:
        build(SubmitOptions(**options), cfg=config(POOLS))
    return str(info.value)


def test_a_bare_submission_takes_the_defaults() -> None:
    spec, warnings = build()
    assert warnings == []
    assert spec.id == JOB_ID and spec.submitted_at == 1700000000.0
    assert spec.command == ["make", "test"] and spec.name == "make"
    assert spec.cwd == "/work"
    assert spec.env == SHELL_ENV
    assert (spec.cpu, spec.mem) == (1, 2 * GIB)  # 1 core and memory / cores
    assert spec.claim_source == "default" and spec.explicit_claim is False
    assert spec.hint_keys == [] and spec.timeout is None and spec.max_queue_time is None
    assert spec.priority == 0 and spec.retries == 0 and spec.nice is None
    assert spec.env_capture == "all"
    # The spec goes to disk and over the socket as JSON, and comes back the same.
    assert JobSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


def test_both_halves_given_write_the_hints_and_keep_existing_values() -> None:
    spec = spec_of(cpu="4", mem="8GB")
    assert (spec.cpu, spec.mem) == (4, 8 * GIB)
    assert spec.claim_source == "explicit" and spec.explicit_claim
    assert spec.env["QEX_CPU"] == "4" and spec.env["QEX_MEM"] == str(8 * GIB)
    assert spec.env["QEX_MEM_MB"] == "8192"
    assert spec.env["GOMAXPROCS"] == "4" and spec.env["RAYON_NUM_THREADS"] == "4"
    assert spec.env["GOMEMLIMIT"] == str(8 * GIB)
    assert spec.env["NODE_OPTIONS"] == "--max-old-space-size=6144"
    assert spec.env["OMP_NUM_THREADS"] == "1"  # the shell's value wins
    assert "OMP_NUM_THREADS" not in spec.hint_keys and "QEX_CPU" in spec.hint_keys
    assert "JAVA_TOOL_OPTIONS" not in spec.env and "MAKEFLAGS" not in spec.env


def test_one_half_alone_writes_no_hint() -> None:
    spec = spec_of(cpu="4")
    assert (spec.cpu, spec.mem) == (4, 2 * GIB)
    assert spec.claim_source == "explicit" and not spec.explicit_claim
    assert spec.hint_keys == [] and "QEX_CPU" not in spec.env


@pytest.mark.parametrize(
    ("cpu", "mem", "expected"),
    [
        ("guess", "half", (3, 6 * GIB)),
        ("auto", "guess", (3, 6 * GIB)),
        ("full", "max", (6, 12 * GIB)),
        ("ALL", "Full", (6, 12 * GIB)),
        ("2", "512MB", (2, 512 * MIB)),
    ],
)
def test_claim_words_resolve_against_the_budget(
    cpu: str, mem: str, expected: tuple[int, int]
) -> None:
    spec = spec_of(cpu=cpu, mem=mem)
    assert (spec.cpu, spec.mem) == expected


def test_a_small_budget_still_gives_one_core_for_half() -> None:
    spec = build(SubmitOptions(command=["x"], cpu="half"), cfg=config("[budget]\ncpu = 1"))[0]
    assert spec.cpu == 1


def test_zero_and_nonsense_claims_are_refused() -> None:
    assert "1 core or more" in refused(cpu="0")
    assert "1 byte of memory or more" in refused(mem="0")
    assert "whole number of cores" in refused(cpu="1.5")
    assert "is not a size" in refused(mem="lots")


def test_learned_claims_fill_the_missing_halves() -> None:
    spec, _ = build(learned=(4, 3 * GIB))
    assert (spec.cpu, spec.mem) == (4, 3 * GIB) and spec.claim_source == "learned"
    assert spec.hint_keys == []  # a learned claim is not a decision someone made
    spec, _ = build(SubmitOptions(command=["x"], cpu="2"), learned=(4, 3 * GIB))
    assert (spec.cpu, spec.mem) == (2, 3 * GIB) and spec.claim_source == "learned"
    spec, _ = build(SubmitOptions(command=["x"], cpu="2", mem="1GB"), learned=(4, 3 * GIB))
    assert spec.claim_source == "explicit"
    spec, _ = build(learned=(4, 3 * GIB), learn_key=["./process", "{}"])
    assert spec.claim_source == "fan-out" and spec.learn_key == ["./process", "{}"]
    spec, _ = build(learned=(4, 3 * GIB), cfg=config("[learn]\nenabled = false"))
    assert spec.claim_source == "default" and (spec.cpu, spec.mem) == (1, 2 * GIB)


def test_a_learned_claim_above_the_budget_is_clamped_with_a_warning() -> None:
    spec, warnings = build(learned=(64, 40 * GIB))
    assert (spec.cpu, spec.mem) == (6, 12 * GIB)
    assert len(warnings) == 1 and "12GB" in warnings[0] and "40GB" in warnings[0]


def test_the_config_defaults_apply() -> None:
    cfg = config('[defaults]\ncpu = 2\nmem = "3GB"\ntimeout = "1h"\nmax_queue_time = "10m"')
    spec = build(cfg=cfg)[0]
    assert (spec.cpu, spec.mem, spec.timeout, spec.max_queue_time) == (2, 3 * GIB, 3600.0, 600.0)


def test_precedence_shell_then_job_file_then_command_line() -> None:
    cfg = config('[defaults]\ntimeout = "1h"\nmax_queue_time = "2h"')
    jf = jobfile("""
cwd = "data"
timeout = "30m"
max_queue_time = "0"
priority = 5
retries = 1
nice = 5
tags = ["b", "a"]
env_capture = "minimal"
[env]
A = "file"
B = "file"
[resources]
cpu = 2
mem = "1GB"
""")
    opts = SubmitOptions(command=["run"], env=["B=cli", "C=cli"], tags=["a", "c"], priority=9)
    spec = build(opts, jf, cfg=cfg)[0]
    assert spec.cwd == "/srv/jobs/data"  # relative to the job file's own directory
    assert spec.env["A"] == "file" and spec.env["B"] == "cli" and spec.env["C"] == "cli"
    assert "SECRET" not in spec.env and spec.env["PATH"] == "/usr/bin"  # minimal capture
    assert spec.timeout == 1800.0 and spec.max_queue_time is None  # "0" in the file: no limit
    assert spec.priority == 9 and spec.retries == 1 and spec.nice == 5
    assert spec.tags == ["a", "b", "c"]
    assert (spec.cpu, spec.mem) == (2, GIB) and spec.explicit_claim
    spec = build(
        replace(opts, cwd="/elsewhere", timeout="5m", cpu="3", nice=0, retries=0), jf, cfg=cfg
    )[0]
    assert spec.cwd == "/elsewhere" and spec.timeout == 300.0 and spec.cpu == 3
    assert spec.nice == 0 and spec.retries == 0


def test_the_command_comes_from_one_place_only() -> None:
    jf = jobfile('command = ["make"]')
    assert build(SubmitOptions(), jf)[0].command == ["make"]
    with pytest.raises(SpecError, match="given twice"):
        build(SubmitOptions(command=["ls"]), jf)
    with pytest.raises(SpecError, match=r"no command.*qex submit -- make test"):
        build(SubmitOptions())


def test_environment_capture_modes() -> None:
    assert spec_of(env_capture="none", cpu="1", mem="1GB").env == {}
    none = spec_of(no_env_capture=True, cpu="1", mem="1GB", env=["X=1"])
    assert none.env == {"X": "1"} and none.hint_keys == []  # no hint without capture
    minimal = build(
        SubmitOptions(command=["x"], env_capture="minimal"),
        cfg=config('[submit]\nminimal_env = ["HOME", "TERM"]'),
    )[0]
    assert minimal.env == {"HOME": "/home/me"}
    assert build(cfg=config('[submit]\nenv_capture = "none"'))[0].env == {}
    assert "disagree" in refused(no_env_capture=True, env_capture="all")
    assert "all, minimal or none" in refused(env_capture="some")
    assert "NAME=VALUE" in refused(env=["NOEQUALS"])
    assert spec_of(env=["EMPTY="]).env["EMPTY"] == ""


def test_hints_can_be_turned_off_three_ways() -> None:
    assert (
        build(
            SubmitOptions(command=["x"], cpu="1", mem="1GB"),
            cfg=config("[claims]\nexport_env = false"),
        )[0].hint_keys
        == []
    )
    assert spec_of(cpu="1", mem="1GB", no_limit_env_hints=True).hint_keys == []
    jf = jobfile('command = ["x"]\nno_limit_env_hints = true\n[resources]\ncpu = 1\nmem = "1GB"')
    assert build(SubmitOptions(), jf)[0].hint_keys == []


def test_claims_also_adds_java_and_make() -> None:
    spec = build(
        SubmitOptions(command=["x"], cpu="2", mem="4GB"),
        cfg=config('[claims]\nalso = ["java", "make"]'),
    )[0]
    assert spec.env["JAVA_TOOL_OPTIONS"] == "-XX:ActiveProcessorCount=2 -Xmx3072m"
    assert spec.env["MAKEFLAGS"] == "-j2"


def test_working_directory() -> None:
    assert spec_of(cwd="sub").cwd == "/work/sub"
    assert spec_of(cwd="~/proj").cwd == "/home/me/proj"
    assert "does not exist" in refused(cwd="/nowhere")
    jf = jobfile('command = ["x"]\ncwd = "~/proj"')
    assert build(SubmitOptions(), jf)[0].cwd == "/home/me/proj"


def test_default_resolve_dir(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert default_resolve_dir(str(link)) == str(real.resolve())
    with pytest.raises(SpecError, match="does not exist"):
        default_resolve_dir(str(tmp_path / "missing"))
    plain = tmp_path / "file"
    plain.write_text("")
    with pytest.raises(SpecError, match="not a directory"):
        default_resolve_dir(str(plain))


def test_gpus_and_pools() -> None:
    cfg = config(POOLS)
    spec = build(SubmitOptions(command=["x"], gpu=1, vram="20GB"), cfg=cfg)[0]
    assert spec.claims == {"gpu": {"count": 1, "size": 20 * GIB}}
    spec = build(SubmitOptions(command=["x"], gpu=2), cfg=cfg)[0]
    assert spec.claims == {"gpu": {"count": 2, "size": None}}  # whole devices
    cfg_vram = config(POOLS + '[defaults]\nvram = "10GB"')
    assert (
        build(SubmitOptions(command=["x"], gpu="1"), cfg=cfg_vram)[0].claims["gpu"]["size"]
        == 10 * GIB
    )
    assert (
        build(SubmitOptions(command=["x"], gpu=1, vram="0"), cfg=cfg_vram)[0].claims["gpu"]["size"]
        is None
    )
    spec = build(
        SubmitOptions(command=["x"], claims=["net=2"], locks=["db", "db", "net:1"]), cfg=cfg
    )[0]
    assert spec.claims == {"net": {"count": 2, "size": None}} and spec.locks == ["db", "net"]
    spec = build(SubmitOptions(command=["x"], locks=["net:3"]), cfg=cfg)[0]
    assert spec.claims == {"net": {"count": 3, "size": None}} and spec.locks == []


def test_pool_claims_that_can_never_start_are_refused() -> None:
    assert "never start" in refused(gpu=3)
    assert "never start" in refused(gpu=1, vram="40GB")
    assert "never start" in refused(claims=["net=5"])
    assert "never start" in refused(claims=["build=2"])
    assert "add --gpu 1" in refused(vram="8GB")
    assert "given twice" in refused(claims=["net=1", "net=2"])
    assert "give one of them" in refused(gpu=1, claims=["gpu=1"])
    assert "NAME=N" in refused(claims=["net"])
    assert "1 unit or more" in refused(claims=["net=0"])
    assert "reserved" in refused(locks=["cpu"])
    assert "declares no `gpu` pool" in build_refused_without_pools(gpu=1)


def build_refused_without_pools(**options: Any) -> str:
    with pytest.raises(SpecError) as info:
        build(SubmitOptions(command=["x"], **options))
    return str(info.value)


def test_the_pool_variable_may_not_be_set_by_the_job() -> None:
    message = refused(gpu=1, env=["CUDA_VISIBLE_DEVICES=0"])
    assert "CUDA_VISIBLE_DEVICES" in message and "disagree" in message
    cfg = config(POOLS)
    jf = jobfile('command = ["x"]\n[resources]\ngpu = 1\n[env]\nCUDA_VISIBLE_DEVICES = "1"')
    with pytest.raises(SpecError, match="disagree"):
        build(SubmitOptions(), jf, cfg=cfg)
    # Inherited from the shell: fine, the supervisor replaces it.
    inherited = build(
        SubmitOptions(command=["x"], gpu=1), cfg=cfg, environ={"CUDA_VISIBLE_DEVICES": "3"}
    )[0]
    assert inherited.claims["gpu"]["count"] == 1
    # No GPU claimed: the job may hide devices itself.
    assert (
        build(SubmitOptions(command=["x"], env=["CUDA_VISIBLE_DEVICES="]), cfg=cfg)[0].claims == {}
    )


def test_command_line_claims_replace_the_job_file_per_pool() -> None:
    jf = jobfile('command = ["x"]\n[resources.claims]\nnet = 1\n')
    spec = build(SubmitOptions(claims=["net=3"]), jf, cfg=config(POOLS))[0]
    assert spec.claims == {"net": {"count": 3, "size": None}}


def test_names() -> None:
    assert spec_of(command=["/usr/bin/python3", "x.py"]).name == "python3"
    assert spec_of(name="build-1").name == "build-1"
    assert "not one qex accepts" in refused(name="my job")
    assert "not one qex accepts" in refused(name="-v")
    assert "not one qex accepts" in refused(name=JOB_ID)
    assert (
        build(SubmitOptions(), jobfile('command = ["x"]\nname = "from-file"'))[0].name
        == "from-file"
    )


def test_ranges_and_limits() -> None:
    assert "-20 to 19" in refused(nice=20)
    assert spec_of(nice=-20).nice == -20
    assert "0 or more" in refused(retries=-1)
    assert "is not a time" in refused(timeout="soon")
    assert spec_of(timeout="never").timeout is None
    assert spec_of(max_queue_time="30m").max_queue_time == 1800.0
    assert "control character" in refused(tags=["a\x1bb"])


def test_dedupe() -> None:
    spec = spec_of(dedupe_key="  build:/src  ", dedupe_window="1h")
    assert spec.dedupe_key == "build:/src" and spec.dedupe_window == 3600.0
    assert spec_of(dedupe_key="k").dedupe_window == 0
    assert spec_of(dedupe_key="k", dedupe_window="0").dedupe_window == 0
    assert "is empty" in refused(dedupe_key="   ")
    assert "needs" in refused(dedupe_window="1h")
    jf = jobfile('command = ["x"]\ndedupe_key = "file"\ndedupe_window = "2h"')
    spec = build(SubmitOptions(), jf)[0]
    assert spec.dedupe_key == "file" and spec.dedupe_window == 7200.0
    spec = build(SubmitOptions(dedupe_key="cli"), jf)[0]
    assert spec.dedupe_key == "cli" and spec.dedupe_window == 7200.0


def test_dependencies_and_groups_pass_through() -> None:
    spec = spec_of(needs=["a", "b", "a"], after=["c"], group="g-id", group_name="ci")
    assert spec.needs == ["a", "b"] and spec.after == ["c"]
    assert spec.group == "g-id" and spec.group_name == "ci"


def test_pipeline_stages_become_specs() -> None:
    pipe = parse_pipeline(
        tomllib.loads(
            'name = "ci"\n[[jobs]]\nname = "test"\ncommand = ["make", "test"]\nneeds = ["build"]\n'
            '[jobs.resources]\ncpu = 2\nmem = "1GB"\n'
            '[[jobs]]\nname = "build"\ncommand = ["make"]\n'
        ),
        "/srv/jobs/ci.toml",
    )
    ids: dict[str, str] = {}
    specs: list[JobSpec] = []
    for number, stage in enumerate(pipe.topological_order()):
        opts, stage_file = stage_options(
            stage, ids, group="group-1", group_name="ci", base=SubmitOptions(tags=["nightly"])
        )
        spec = build_spec(
            opts,
            stage_file,
            config=config(),
            machine=MACHINE,
            environ=SHELL_ENV,
            shell_cwd="/work",
            learned=None,
            job_id=f"id-{number}",
            now=1.0,
            resolve_dir=fake_dirs,
        )[0]
        ids[str(stage.name)] = spec.id
        specs.append(spec)
    build_spec_, test_spec = specs
    assert (
        build_spec_.name == "build" and build_spec_.command == ["make"] and build_spec_.needs == []
    )
    assert test_spec.name == "test" and test_spec.needs == ["id-0"] and test_spec.cpu == 2
    assert test_spec.group == "group-1" and test_spec.tags == ["nightly"]
    with pytest.raises(SpecError, match="topological order"):
        stage_options(pipe.stage("test"), {}, group="g", group_name=None)


def test_hint_helpers() -> None:
    hints = claim_hints(3, 2 * MIB)
    assert all(hints[key] == "3" for key in CPU_HINTS)
    assert "NODE_OPTIONS" not in hints  # a 1MB heap is not worth a flag
    env = {"GOMAXPROCS": "8"}
    written = apply_hints(env, 2, GIB)
    assert "GOMAXPROCS" not in written and env["GOMAXPROCS"] == "8"
    rewrite_hints(env, written, 2, 4 * GIB)  # an OOM retry raised the claim
    assert env["QEX_MEM"] == str(4 * GIB) and env["GOMAXPROCS"] == "8"
    assert env["NODE_OPTIONS"] == "--max-old-space-size=3072"


UNITS = st.sampled_from([1, 1024, MIB, GIB])


@given(st.integers(min_value=1, max_value=64), st.integers(min_value=1, max_value=1023), UNITS)
def test_explicit_claims_survive_the_text_round_trip(cpu: int, k: int, unit: int) -> None:
    mem = k * unit
    spec = spec_of(cpu=str(cpu), mem=format_size(mem))
    assert (spec.cpu, spec.mem) == (cpu, mem)
    assert spec.env["QEX_CPU"] == str(cpu) and spec.env["QEX_MEM"] == str(mem)
    assert spec.env["QEX_MEM_MB"] == str(mem // MIB)


@given(st.integers(min_value=1, max_value=59), st.integers(min_value=0, max_value=23))
def test_limits_survive_the_text_round_trip(minutes: int, hours: int) -> None:
    seconds = hours * 3600 + minutes * 60
    spec = spec_of(timeout=format_duration(seconds), max_queue_time=str(seconds))
    assert spec.timeout == seconds and spec.max_queue_time == seconds
