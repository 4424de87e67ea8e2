"""`qex help job-file`: one job described in a file."""

from __future__ import annotations

TEXT = """\
qex job files
=============

A job file holds the description of ONE job. It is handy for a long command,
for a lot of environment variables, or for keeping the job under version
control next to the code.

  qex submit --job fit.toml

TOML, YAML and JSON are all accepted; the file extension decides which. The
examples here use TOML. For several linked jobs in one file, write a pipeline
file instead and use `qex pipeline` (see `qex help pipeline`).

Smallest useful file
--------------------

  command = ["python", "fit.py"]

Every key
---------

  name = "fit-model"              # shown by `qex list`; also a handle
  cwd = "/srv/project"            # default: the directory you submit from
  command = ["python", "fit.py", "--rounds", "20"]
  timeout = "6h"                  # limit on RUNNING; default: none
  max_queue_time = "45m"          # limit on WAITING; default: none
  tags = ["nightly"]              # select with `qex list --tag nightly`
  priority = 0                    # higher starts sooner
  needs = ["prepare"]             # run only if these succeed
  after = ["tidy"]                # run once these stop, whatever happened
  env_capture = "all"             # all | minimal | none
  nice = 10                       # -20..19; higher yields more
  locks = ["dataset"]             # never run beside another holder
  retries = 0                     # extra attempts after a failure
  no_limit_env_hints = false      # true: do not put the claim in the env
  dedupe_key = "fit:/srv/project" # no second job while this one lives
  dedupe_window = "0"             # also hold the key after a success

  [resources]
  cpu = 4
  mem = "12GB"
  gpu = 1                         # how many devices of pool `gpu`
  vram = "16GB"                   # per device that the job receives

  [resources.claims]
  net = 1                         # one unit of the pool `net`

  [env]
  DATA_ROOT = "/srv/data"

What the keys accept
--------------------

`command` is a list of arguments, not a shell line. No shell is started, so
nothing needs quoting or escaping. When you want a pipe or a redirection,
name the shell yourself:

  command = ["sh", "-c", "prepare | train > result.txt"]

`cpu` is a whole number, or one of the words guess/half/auto (half of the
budget) and max/full/all (all of it). `mem` takes `12GB`, `12G`, `768MB`, a
plain number of bytes, or the same words. Sizes step by 1024.

Together, `gpu` and `vram` form a claim on the `gpu` pool; `vram` is the
amount on EACH device the job receives; qex never adds devices together.
Without `vram`, the job gets each of its devices whole.

`[resources.claims]` claims any other pool: a number, or a table with both
parts, e.g. `fpga = { count = 2, size = "4GB" }`.

Do NOT put CUDA_VISIBLE_DEVICES in `[env]` when the job claims a GPU. qex
chooses the devices and sets that variable itself; two values would
contradict each other, so qex refuses the job and tells you why.

`timeout` and `max_queue_time` take `30s`, `5m`, `4h`, `2d`, a number of
seconds, or `0` for no limit. The first bounds how long the job RUNS. The
second bounds how long it WAITS: once it passes, the job never starts and
becomes `expired`. The waiting clock starts at submission and includes time
spent waiting for jobs named in `needs`.

`env_capture` decides which of your variables the job receives:

  all        everything in your shell (default)
  minimal    only PATH, HOME, USER, LOGNAME, SHELL, LANG and TZ
  none       nothing from your shell

`dedupe_key` makes submitting idempotent: while a job with this key is
queued or running, a new submission with the same key starts NOTHING; qex
prints the existing id and exits 0. That is exactly what a script that is
re-run needs. `--dedupe-key` on the command line replaces the file's value.

`dedupe_window` (e.g. `1h`) keeps the key taken for that long after a job
SUCCEEDED. A failed job never keeps its key, since the fix for a failure is
to run again. Default `0`.

Pipeline stages cannot have a dedupe key: the key would answer for one stage
only, and later stages would end up waiting on a job from an older run.

Which value wins
----------------

Later beats earlier:

  environment:  your shell  ->  file [env]  ->  --env K=V
  directory:    your shell  ->  file cwd    ->  --cwd DIR
  other values: config file ->  job file    ->  command-line options

Secrets
-------

qex saves the captured environment in spec.json, readable only by you (mode
0600). When secrets live in your shell, use `env_capture = "minimal"` or
`--env-capture minimal`. `qex status` does not print the environment unless
you add `--show-env`.

A misspelt key is an error; qex never skips a key it does not know.
`qex schema job` prints the JSON Schema of this format.
"""
