"""`qex help pipeline`: several linked jobs in one file."""

from __future__ import annotations

TEXT = """\
qex pipelines
=============

A pipeline file lists several jobs, and one command submits all of them.
Each entry under `[[jobs]]` becomes an ordinary qex job with its own id,
record and logs, which is why this page calls them jobs (or stages).

  qex pipeline release.toml

The group id goes to stdout and each stage's id to stderr, so
`G=$(qex pipeline release.toml)` does what you expect.

  name = "release"

  [[jobs]]
  name = "compile"
  command = ["cargo", "build", "--release"]

  [[jobs]]
  name = "tests"
  command = ["cargo", "test", "--release"]
  needs = ["compile"]

  [[jobs]]
  name = "clippy"
  command = ["cargo", "clippy"]
  needs = ["compile"]

  [[jobs]]
  name = "publish"
  command = ["./publish.sh"]
  needs = ["tests", "clippy"]

  [[jobs]]
  name = "tidy"
  command = ["./tidy.sh"]
  after = ["publish"]

`needs` runs a stage only when the named stages SUCCEEDED; `after` runs it
once they have stopped, whatever their result. Both name stages of the same
file.

A stage accepts every key of a job file (`qex help job-file`): `env`, `cwd`,
`tags`, `priority`, `timeout`, `max_queue_time`, `nice`, `env_capture`,
`locks`, `retries`, `no_limit_env_hints` and `[resources]`. So a stage claims
a GPU exactly like a job file does:

  [[jobs]]
  name = "fit"
  command = ["python", "fit.py"]
  needs = ["compile"]
  [jobs.resources]
  cpu = 8
  mem = "32GB"
  gpu = 1
  vram = "24GB"

The one exception is the dedupe key: a key on one stage would only cover that
stage, and later stages would end up waiting on a job from an older run.

`max_queue_time` counts ALL the waiting, including waiting for earlier
stages. For a later stage give a value that covers the pipeline up to that
point, or none.

Why a file and not several submissions
--------------------------------------

Names are easy to type but not unique over time. Run the same four
`qex submit --needs compile` commands twice and the name `compile` matches
two jobs.

A name in a pipeline file is local to that file and to that single
submission. qex swaps each one for the id it has just created, so no name
leaks out. Running the file again makes fresh jobs with fresh ids, and the
runs stay apart.

One handle for the whole pipeline
---------------------------------

All jobs of one submission share a group id, and that id stands for every
stage:

  G=$(qex pipeline release.toml)
  qex wait "$G"          # wait for every stage
  qex status "$G"        # show every stage
  qex kill "$G"          # stop all of them
  qex clean "$G"         # delete every record
  qex list --group "$G"

The pipeline's name works too, with one caveat: it comes from the file, so
all runs of the file carry it. When a name matches more than one
run, qex refuses it and lists the group id of each. In scripts, use the
group id.

`qex status --json` prints an array for a pipeline and an object for a
single job, so a script written for one job keeps working. A one-stage
pipeline still gives an array: the shape follows what you asked about.

`qex logs` shows one job, so it refuses a group and lists its stages.

Saving the ids
--------------

  qex pipeline release.toml --id-file ids.env
  . ./ids.env              # defines $group, $compile, $tests, ...
  qex status "$publish" --wait

An id file whose name ends in `.json` is written as a JSON object instead,
for programs.

All or nothing
--------------

qex reads and checks the whole file before submitting anything. A cycle
(a -> b -> a), a name that no stage has, a duplicate name, or a stage without
a command is an error, and no job starts. If the coordinator cannot obey an
option that some stage uses, the whole file is refused in one message.

One command over many inputs is a different tool: `qex help each-line`.
`qex schema pipeline` prints the JSON Schema of this format.
"""
