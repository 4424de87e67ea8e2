"""The fields of a job, once: each one's command-line option, its job-file key and its help.

Pure data, no click and no enum, so anything may read it cheaply: the click commands
(`qex.cli.submitting.spec_options`), a parser without click, `submit_options_from`, and the
job-file reader (`qex.core.jobfile.JOB_FIELDS` is derived from it). A test holds every row
to `SubmitOptions`, the job-file schema and the documentation.

Each row: `name` is the attribute of `qex.core.jobspec.SubmitOptions` (None for an option of
the submission that is not part of the job); `option` the long flag; `dest` the keyword that
click passes; `kind` how the value is read (`text`, `int`, `count` = a whole number >= 0,
`flag`, `multi` = repeatable text); `file_key` the key of a job file (`resources.cpu` is
`cpu` under `[resources]`; None when a file cannot say it); `stage` whether a pipeline stage
takes it too; `capability` what the coordinator must be able to do to obey it (the CLI
refuses the option, by these names, when the coordinator cannot).
"""

from __future__ import annotations

from typing import Final, NamedTuple

TEXT: Final = "text"
INT: Final = "int"
COUNT: Final = "count"
FLAG: Final = "flag"
MULTI: Final = "multi"


class JobField(NamedTuple):
    name: str | None
    option: str
    dest: str
    kind: str
    metavar: str | None
    help: str
    file_key: str | None
    stage: bool = True
    capability: str | None = None


#: In the order of `qex submit --help`.
FIELDS: tuple[JobField, ...] = (
    JobField("cpu", "--cpu", "cpu", TEXT, "N|WORD",
             "Cores this job claims: a number, or half/guess or full/max.", "resources.cpu"),
    JobField("mem", "--mem", "mem", TEXT, "SIZE|WORD",
             "Memory this job claims: 512MB, 8GB, or half/guess or full/max.", "resources.mem"),
    JobField("gpu", "--gpu", "gpu", TEXT, "N", "Devices claimed from the pool `gpu`.",
             "resources.gpu", capability="pools"),
    JobField("vram", "--vram", "vram", TEXT, "SIZE", "Memory claimed on EACH GPU the job gets.",
             "resources.vram", capability="pools"),
    JobField("claims", "--claim", "claim", MULTI, "NAME=N[:SIZE]",
             "Units of a declared pool (repeatable).", "resources.claims", capability="pools"),
    JobField("locks", "--lock", "lock", MULTI, "NAME",
             "A lock that no two jobs hold at once, any text such as target/debug; NAME:N "
             "takes N units (repeatable).", "locks", capability="locks"),
    JobField("name", "--name", "name", TEXT, "NAME",
             "A name for `qex list`, usable in place of the id.", "name"),
    JobField("cwd", "--cwd", "cwd", TEXT, "DIR", "The directory the job runs in.", "cwd"),
    JobField("env", "--env", "env", MULTI, "K=V",
             "Add or replace one environment variable (repeatable).", "env"),
    JobField("env_capture", "--env-capture", "env_capture", TEXT, "all|minimal|none",
             "How much of this shell's environment the job gets.", "env_capture"),
    JobField("no_env_capture", "--no-env-capture", "no_env_capture", FLAG, None,
             "Give the job none of this shell's environment.", None),
    JobField("tags", "--tag", "tag", MULTI, "TAG", "A tag for `qex list --tag`.", "tags"),
    JobField("priority", "--priority", "priority", INT, "N",
             "A larger number starts earlier (negative numbers are fine).", "priority"),
    JobField("timeout", "--timeout", "timeout", TEXT, "TIME",
             "Stop the JOB after this time (30s, 5m, 4h, 2d; 0 = no limit).", "timeout"),
    JobField("max_queue_time", "--max-queue-time", "max_queue_time", TEXT, "TIME",
             "Give up (state expired) if the job has not started after this time.",
             "max_queue_time", capability="max-queue-time"),
    JobField("needs", "--needs", "needs", MULTI, "ID[,ID]",
             "Wait for these jobs, and do not run unless they succeed.", "needs",
             capability="dependencies"),
    JobField("after", "--after", "after", MULTI, "ID[,ID]",
             "Wait for these jobs to stop, whatever their result.", "after",
             capability="dependencies"),
    JobField(None, "--job", "job", TEXT, "FILE", "Read the job from a TOML, YAML or JSON file.",
             None),
    JobField("retries", "--retries", "retries", COUNT, "N",
             "Run the job again up to N times when it fails.", "retries", capability="retries"),
    JobField("nice", "--nice", "nice", INT, "N",
             "-20 to 19; a larger number gives way to people (default 10).", "nice",
             capability="politeness"),
    JobField("no_limit_env_hints", "--no-limit-env-hints", "no_limit_env_hints", FLAG, None,
             "Do not tell the job its claim (QEX_CPU, OMP_NUM_THREADS, ...).",
             "no_limit_env_hints"),
    JobField("dedupe_key", "--dedupe-key", "dedupe_key", TEXT, "KEY",
             "Start nothing while a job with this key waits or runs; give its id.",
             "dedupe_key", stage=False, capability="dedupe"),
    JobField("dedupe_window", "--dedupe-window", "dedupe_window", TEXT, "TIME",
             "Keep the key of a job that succeeded for this long.", "dedupe_window",
             stage=False),
    JobField("engine", "--engine", "engine", TEXT, "local|slurm",
             "Where the job runs: this machine, or Slurm ([engine] kind).", None),
    JobField(None, "--id-file", "id_file", TEXT, "FILE",
             "Write the id here (atomically) before anything else happens.", None),
)

#: The job's own fields that are not options: the command (`-- COMMAND...`, or `command` in
#: a file) and the group a fan-out or a pipeline puts the job in.
NOT_OPTIONS: tuple[str, ...] = ("command", "group", "group_name")

#: Keys under `[resources]`, in table order.
RESOURCE_KEYS: tuple[str, ...] = tuple(
    f.file_key.split(".", 1)[1] for f in FIELDS
    if f.file_key is not None and f.file_key.startswith("resources."))


def file_keys(*, stage: bool = False) -> tuple[str, ...]:
    """The top-level keys of a job file (or of a pipeline stage), in table order: `command`
    first, `resources` where its first key falls."""
    keys: list[str] = ["command"]
    for row in FIELDS:
        if row.file_key is None or (stage and not row.stage):
            continue
        key = row.file_key.split(".", 1)[0]
        if key not in keys:
            keys.append(key)
    return tuple(keys)


def options_needing() -> dict[str, str]:
    """capability -> the options that need it, as a person reads them (`--a, --b and --c`)."""
    grouped: dict[str, list[str]] = {}
    for row in FIELDS:
        if row.capability is not None:
            grouped.setdefault(row.capability, []).append(row.option)
    return {name: options[0] if len(options) == 1
            else ", ".join(options[:-1]) + " and " + options[-1]
            for name, options in grouped.items()}


def by_dest() -> dict[str, JobField]:
    return {row.dest: row for row in FIELDS}
