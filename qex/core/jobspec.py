"""Build the JobSpec of a submission: everything resolved once, on the CLI side.

A later source replaces an earlier one:

    environment   the shell  -> job file [env]   -> --env K=V
    directory     the shell  -> job file cwd     -> --cwd D
    every other   config     -> job file         -> command line

The result is exact: claim words are resolved against the budget NOW, the directory is
canonical, the environment is captured, so the record says what the job will get and a
later change of the shell, the budget or the config file never changes a waiting job.

The module is pure apart from one seam: the directory check needs the filesystem, so
`build_spec` takes `resolve_dir` (default: `os.path.realpath` plus an isdir test). Tests
pass their own.

Errors are `SpecError`: one sentence that names the problem and what to write instead.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Mapping
from typing import Any

from qex.core.claims import (
    ClaimError,
    ClaimRequest,
    parse_cpu_claim,
    parse_mem_claim,
    resolve_cpu,
    resolve_mem,
)
from qex.core.config import Config, Machine
from qex.core.hints import apply_hints
from qex.core.jobfile import JobFile, Unset
from qex.core.model import dataclass, field, replace
from qex.core.names import derive_name, is_safe_name, visible
from qex.core.records import JobSpec
from qex.core.spec_pools import check_pool_env, pool_claims
from qex.core.units import UnitError, format_size, parse_duration

CAPTURE_MODES = ("all", "minimal", "none")


class SpecError(ValueError):
    """A submission that cannot become a job; the message says what to change."""


@dataclass
class SubmitOptions:
    """Every submit option as the command line gave it (None / empty = not given).

    `needs` and `after` hold RESOLVED ids: the CLI turns the names and ids of the command
    line AND of the job file's `needs`/`after` into ids (through the coordinator) before it
    calls `build_spec`, which never reads `JobFile.needs`/`after` itself.
    """

    command: list[str] = field(default_factory=list)
    cpu: str | int | None = None
    mem: str | int | None = None
    gpu: str | int | None = None
    vram: str | int | None = None
    claims: list[str] = field(default_factory=list)        # NAME=N or NAME=N:SIZE
    name: str | None = None
    cwd: str | None = None
    env: list[str] = field(default_factory=list)           # K=V
    env_capture: str | None = None
    no_env_capture: bool = False
    tags: list[str] = field(default_factory=list)
    priority: int | None = None
    timeout: str | None = None
    max_queue_time: str | None = None
    needs: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    retries: int | None = None
    locks: list[str] = field(default_factory=list)         # NAME or NAME:N
    nice: int | None = None
    no_limit_env_hints: bool = False
    dedupe_key: str | None = None
    dedupe_window: str | None = None
    group: str | None = None
    group_name: str | None = None
    engine: str | None = None


def default_resolve_dir(path: str) -> str:
    """The canonical form of an existing directory (symbolic links resolved)."""
    real = os.path.realpath(path)
    if not os.path.exists(real):
        raise SpecError(
            f"the directory {visible(path)} does not exist; create it, or give another with --cwd"
        )
    if not os.path.isdir(real):
        raise SpecError(
            f"the path {visible(path)} is not a directory; give a directory with --cwd"
        )
    return real


def build_spec(
    opts: SubmitOptions,
    job_file: JobFile | None,
    *,
    config: Config,
    machine: Machine,
    environ: Mapping[str, str],
    shell_cwd: str,
    learned: tuple[int | None, int | None] | None,
    job_id: str,
    now: float,
    learn_key: list[str] | None = None,
    resolve_dir: Callable[[str], str] = default_resolve_dir,
) -> tuple[JobSpec, list[str]]:
    """The spec for one submission, and warnings for stderr (the spec is valid regardless).

    `learned` is the learner's (cpu, mem) suggestion for this command, or None; it fills a
    half that neither the command line nor the job file gave, when `[learn] enabled`.
    `learn_key` (a fan-out's template) marks a learned claim as `fan-out`.
    """
    jf = job_file if job_file is not None else JobFile(source="")
    warnings: list[str] = []
    command = _command(opts, job_file)
    capture = _capture_mode(opts, jf, config)
    env = _environment(capture, environ, config)
    own_env = dict(jf.env)
    for item in opts.env:
        key, value = _env_option(item)
        own_env[key] = value
    env.update(own_env)
    cwd = resolve_dir(_cwd_path(opts, jf, shell_cwd, environ))

    cpu, mem, source, explicit = _claim(
        opts, jf, config=config, machine=machine, learned=learned, learn_key=learn_key,
        warnings=warnings,
    )
    engine = _engine(opts, config)
    try:
        claims, locks = pool_claims(
            jf, claim_options=opts.claims, gpu_option=opts.gpu, vram_option=opts.vram,
            lock_options=opts.locks, config=config, check=engine is None,
        )
        check_pool_env(claims, own_env, config)
    except ClaimError as exc:
        raise SpecError(str(exc)) from None

    hint_keys: list[str] = []
    if (explicit and config.claims.export_env and capture != "none"
            and not opts.no_limit_env_hints and not jf.no_limit_env_hints):
        hint_keys = apply_hints(env, cpu, mem, config.claims.also)

    dedupe_key, dedupe_window = _dedupe(opts, jf)
    spec = JobSpec(
        id=job_id,
        name=_name(opts, jf, command),
        cwd=cwd,
        command=command,
        env=env,
        cpu=cpu,
        mem=mem,
        submitted_at=now,
        timeout=_limit(opts.timeout, "--timeout", jf.timeout, config.defaults.timeout),
        max_queue_time=_limit(opts.max_queue_time, "--max-queue-time", jf.max_queue_time,
                              config.defaults.max_queue_time),
        tags=sorted(set(_checked_words([*jf.tags, *opts.tags], "--tag"))),
        priority=opts.priority if opts.priority is not None else (jf.priority or 0),
        env_capture=capture,
        claim_source=source,
        group=opts.group,
        group_name=opts.group_name,
        needs=list(dict.fromkeys(opts.needs)),
        after=list(dict.fromkeys(opts.after)),
        locks=locks,
        claims={name: claim.to_dict() for name, claim in sorted(claims.items())},
        retries=_retries(opts, jf),
        nice=_nice(opts, jf),
        dedupe_key=dedupe_key,
        dedupe_window=dedupe_window,
        learn_key=list(learn_key) if learn_key is not None else None,
        hint_keys=hint_keys,
        explicit_claim=explicit,
        engine=engine,
    )
    return spec, warnings


def _engine(opts: SubmitOptions, config: Config) -> str | None:
    """None for this machine, or the engine that `--engine` or `[engine] kind` names."""
    word = opts.engine if opts.engine is not None else config.engine.kind
    word = word.strip().lower()
    if word not in ("local", "slurm"):
        raise SpecError(f"`--engine {visible(word)}` names no engine; give local or slurm")
    return None if word == "local" else word


def _command(opts: SubmitOptions, job_file: JobFile | None) -> list[str]:
    file_command = job_file.command if job_file is not None else None
    if opts.command and file_command:
        where = job_file.source if job_file is not None else "the job file"
        raise SpecError(
            f"the command is given twice, after `--` and in the job file {where}; "
            "keep one of them"
        )
    command = list(opts.command) if opts.command else list(file_command or [])
    if not command:
        raise SpecError(
            "there is no command to run; give it after `--`, as in `qex submit -- make test`, "
            "or as command = [\"make\", \"test\"] in a job file"
        )
    if not command[0]:
        raise SpecError("the command starts with an empty program name; put the program first")
    if any("\0" in arg for arg in command):
        raise SpecError(
            "the command holds a NUL character, which no program can receive; remove it"
        )
    return command


def _capture_mode(opts: SubmitOptions, jf: JobFile, config: Config) -> str:
    if opts.no_env_capture:
        if opts.env_capture is not None and opts.env_capture.strip().lower() != "none":
            raise SpecError(
                f"--no-env-capture and --env-capture {visible(opts.env_capture)} disagree; "
                "give one of them"
            )
        return "none"
    if opts.env_capture is not None:
        mode = opts.env_capture.strip().lower()
        if mode not in CAPTURE_MODES:
            raise SpecError(
                f"--env-capture takes all, minimal or none, and `{visible(opts.env_capture)}` "
                "is none of them"
            )
        return mode
    return jf.env_capture or config.submit.env_capture


def _environment(capture: str, environ: Mapping[str, str], config: Config) -> dict[str, str]:
    if capture == "all":
        return dict(environ)
    if capture == "minimal":
        return {key: environ[key] for key in config.submit.minimal_env if key in environ}
    return {}


def _env_option(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise SpecError(
            f"--env takes NAME=VALUE, and `{visible(item)}` is not in that form; "
            "give for example --env HF_HOME=/data/hf"
        )
    if "\0" in item:
        raise SpecError(f"--env {visible(key)} holds a NUL character, which no program can receive")
    return key, value


def _expand_home(path: str, environ: Mapping[str, str]) -> str:
    home = environ.get("HOME", "")
    if home and (path == "~" or path.startswith("~/")):
        return home + path[1:]
    return path


def _cwd_path(
    opts: SubmitOptions, jf: JobFile, shell_cwd: str, environ: Mapping[str, str]
) -> str:
    path = shell_cwd
    if jf.cwd:
        file_dir = posixpath.join(shell_cwd, jf.base_dir) if jf.base_dir else shell_cwd
        path = posixpath.join(file_dir, _expand_home(jf.cwd, environ))
    if opts.cwd:
        path = posixpath.join(shell_cwd, _expand_home(opts.cwd, environ))
    return path


def _parse_request(
    value: Any, parse: Callable[..., ClaimRequest], what: str
) -> ClaimRequest | None:
    if value is None:
        return None
    try:
        return parse(value, what=what)
    except ClaimError as exc:
        raise SpecError(str(exc)) from None


def _claim(
    opts: SubmitOptions, jf: JobFile, *, config: Config, machine: Machine,
    learned: tuple[int | None, int | None] | None, learn_key: list[str] | None,
    warnings: list[str],
) -> tuple[int, int, str, bool]:
    """(cpu, mem, claim_source, explicit): explicit when the person gave BOTH halves."""
    cpu_budget = config.cpu_budget(machine)
    mem_budget = config.mem_budget(machine)
    cpu_req = _parse_request(opts.cpu, parse_cpu_claim, "--cpu")
    if cpu_req is None:
        cpu_req = jf.resources.cpu
    mem_req = _parse_request(opts.mem, parse_mem_claim, "--mem")
    if mem_req is None:
        mem_req = jf.resources.mem
    learned_cpu, learned_mem = learned if (learned and config.learn.enabled) else (None, None)
    used_learned = False
    if cpu_req is not None:
        cpu = resolve_cpu(cpu_req, cpu_budget)
    elif learned_cpu:
        cpu = max(1, min(learned_cpu, cpu_budget))
        used_learned = True
    else:
        cpu = config.defaults.cpu
    if mem_req is not None:
        mem = resolve_mem(mem_req, mem_budget)
    elif learned_mem:
        mem = max(1, min(learned_mem, mem_budget))
        used_learned = True
        if learned_mem > mem_budget:
            warnings.append(
                f"the earlier jobs of this command needed about {format_size(learned_mem)}, more "
                f"than the memory budget of {format_size(mem_budget)}, so this job claims the "
                "whole budget; give --mem to choose, or raise [budget] mem"
            )
    else:
        mem = config.defaults.default_mem(machine)
    if used_learned:
        source = "fan-out" if learn_key is not None else "learned"
    elif cpu_req is not None or mem_req is not None:
        source = "explicit"
    else:
        source = "default"
    return cpu, mem, source, cpu_req is not None and mem_req is not None


def _name(opts: SubmitOptions, jf: JobFile, command: list[str]) -> str:
    chosen = opts.name if opts.name is not None else jf.name
    if chosen is None:
        return derive_name(command[0])
    if not is_safe_name(chosen):
        raise SpecError(
            f"the name `{visible(chosen)}` is not one qex accepts: a name holds only letters, "
            "digits, `.`, `_` and `-`, does not start with `-` and is not an id; choose for "
            "example build-1"
        )
    return chosen


def _limit(
    option: str | None, flag: str, from_file: float | Unset | None, default: float | None
) -> float | None:
    if option is not None:
        try:
            return parse_duration(option, what=f"{flag} value")
        except UnitError as exc:
            raise SpecError(str(exc)) from None
    if isinstance(from_file, Unset):
        return default
    return from_file


def _checked_words(words: list[str], flag: str) -> list[str]:
    for word in words:
        if not word.strip() or any(ord(c) < 0x20 or ord(c) == 0x7F for c in word):
            raise SpecError(
                f"{flag} `{visible(word)}` is empty or holds a control character; give "
                "plain text"
            )
    return words


def _retries(opts: SubmitOptions, jf: JobFile) -> int:
    retries = opts.retries if opts.retries is not None else (jf.retries or 0)
    if retries < 0:
        raise SpecError(f"--retries takes 0 or more, and it is {retries}")
    return retries


def _nice(opts: SubmitOptions, jf: JobFile) -> int | None:
    nice = opts.nice if opts.nice is not None else jf.nice
    if nice is not None and not -20 <= nice <= 19:
        raise SpecError(f"--nice takes -20 to 19 (a larger number gives way), and it is {nice}")
    return nice


def _dedupe(opts: SubmitOptions, jf: JobFile) -> tuple[str | None, float]:
    key = opts.dedupe_key if opts.dedupe_key is not None else jf.dedupe_key
    if key is not None:
        key = key.strip()
        if not key:
            raise SpecError(
                "--dedupe-key is empty; give a key that names the work and the place, such as "
                "build:$(pwd)"
            )
    window: float = 0.0
    if opts.dedupe_window is not None:
        if opts.dedupe_key is None and jf.dedupe_key is None:
            raise SpecError(
                "--dedupe-window keeps the key of a job that succeeded, so it needs "
                "--dedupe-key too; add one"
            )
        try:
            window = parse_duration(opts.dedupe_window, what="--dedupe-window value") or 0.0
        except UnitError as exc:
            raise SpecError(str(exc)) from None
    elif jf.dedupe_window is not None:
        window = jf.dedupe_window
    return key, window


def stage_options(
    stage: JobFile,
    stage_ids: Mapping[str, str],
    *,
    group: str,
    group_name: str | None,
    base: SubmitOptions | None = None,
) -> tuple[SubmitOptions, JobFile]:
    """The (options, job file) pair for one pipeline stage, for `build_spec`.

    `stage_ids` maps the names of the stages submitted so far to their ids; submit in
    `PipelineFile.topological_order()` so every stage this one waits for is there. `base`
    carries options from the `qex pipeline` command line that apply to every stage.
    """
    base = base or SubmitOptions()
    missing = [dep for dep in (*stage.needs, *stage.after) if dep not in stage_ids]
    if missing:
        raise SpecError(
            f"the stage `{stage.name}` waits for {', '.join(missing)}, which has no id yet; "
            "submit the stages in topological order"
        )
    opts = replace(
        base,
        command=[],
        name=stage.name,
        needs=[*base.needs, *(stage_ids[dep] for dep in stage.needs)],
        after=[*base.after, *(stage_ids[dep] for dep in stage.after)],
        group=group,
        group_name=group_name,
        dedupe_key=None,
        dedupe_window=None,
    )
    return opts, replace(stage, needs=(), after=())
