"""`qex help config`: every key of the configuration file."""

from __future__ import annotations

TEXT = """\
qex configuration
=================

The configuration lives in one optional file, `~/.config/qex.toml` (or
`$XDG_CONFIG_HOME/qex.toml`). `qex config path` prints where qex looks;
`qex config show` prints the values in force right now, including whether
memory enforcement is ACTIVE or NOT ACTIVE and why.

All keys, with their defaults
-----------------------------

  [budget]                        # the share of the machine qex may hand out
  cpu = "75%"                     # cores: a whole number or a percentage
  mem = "75%"                     # memory: bytes, a size (64GB) or a percent

  [system]
  reserve_mem = "2GB"             # leave at least this much memory free
  max_pressure = 20               # memory PSI above this holds new starts

  [enforce]                       # Linux only; see `qex help enforcement`
  mode = "off"                    # off | soft | hard
  mem_overcommit = 1.5            # soft: hard ceiling = claim x this
  use_systemd = true              # may ask systemd for a scope per job

  [peers]                         # other users of this machine
  enabled = true
  dir = "/tmp/qex"                # QEX_PEERS_DIR overrides it
  stale_after = "30s"             # ignore peer files older than this

  [queue]
  oversized = "run-when-idle"     # run-when-idle | reject | queue
  settle = "3s"                   # quiet time before an oversized start
  max_bypass = 2                  # jobs that may overtake the front job

  [politeness]
  nice = 10                       # -20..19; higher yields to people
  io = "none"                     # none | best-effort | idle (Linux)
  oom_score_adj = 0               # higher: the OOM killer picks it sooner

  [submit]
  env_capture = "all"             # all | minimal | none
  minimal_env = ["PATH", "HOME", "USER", "LOGNAME",    # what "minimal"
                 "SHELL", "LANG", "TZ"]                 # passes on

  [claims]
  export_env = true               # put the claim into the job's environment
  also = []                       # may add "java" and/or "make"

  [learn]
  enabled = true                  # reuse past usage as the next claim
  margin = 1.5                    # factor on top of the measured peak

  [logs]
  max_bytes = "32MB"              # kept per stream per job; "0" = no cap

  [retry]
  on_oom = 2                      # raises of the claim after a proven OOM
  growth = 2.0                    # multiply the claim by this per raise

  [history]
  keep = "1d"                     # remember a deleted job's id this long

  [gc]
  keep = "1d"                     # `qex gc` removes records older than this

  [defaults]                      # a submission without these options
  cpu = 1                         # cores per job
  mem = "..."                     # default: machine memory / core count
  timeout = "0"                   # no limit
  max_queue_time = "0"            # no limit
  vram = "0"                      # 0: a job gets its devices whole

  [[pool]]                        # devices: qex says WHICH one a job gets
  name = "gpu"
  size = "vram"                   # what each device's capacity measures
  devices = ["48GB", "48GB"]
  env = "CUDA_VISIBLE_DEVICES"

  [[pool]]                        # a plain count: no devices
  name = "net"
  count = 4                       # four units to share out

  [hooks]
  on_stop = []                    # program + arguments run when a job ends
  on_stop_states = ["completed", "failed", "killed",
                    "timeout", "expired", "oom"]
  timeout = "30s"                 # how long the hook may run

  [engine]                        # where jobs run (see docs/slurm.md)
  kind = "local"                  # "local", or "slurm" for a Slurm cluster
  partition = "..."               # sbatch --partition (also account, qos)
  sbatch_options = []             # more sbatch options, added last
  shared_dir = "..."              # nodes see it; the state dir must be inside
  poll = 5                        # seconds between looks at squeue
  python = "..."                  # the interpreter with qex on the nodes

Numbers with or without quotes
------------------------------

Every number, size, duration or percentage may be written bare or quoted:
`cpu = 4` and `cpu = "4"` mean the same, as do `margin = 1.5` and
`margin = "1.5"`. A size without a unit is in bytes; a duration without a
unit is in seconds. Quoting never widens what a key accepts: `[budget] cpu`
is a share of the machine for all jobs together, so a percentage is fine
there, while `[defaults] cpu` is the cores of ONE job and must be a whole
number; a percentage there is rejected.

A misspelt key or section is an error; qex never ignores what it does not
know.

The stop hook
-------------

`[hooks] on_stop` names a program to run whenever a job arrives in a final
state. Use it to notify someone: a desktop popup, a line in a file, a chat
message. Whoever walked away from a four-hour job then hears that it ended.

  [hooks]
  on_stop = ["/usr/bin/notify-send", "qex: a job finished"]

The hook exists ONLY here, never in a job file: it belongs to the machine and
the person in front of it, not to the work. One pipeline may run both on a
desktop with a display and on a headless build server.

Give an ABSOLUTE path. The hook runs in the job's directory, which the
submitter chose, so a relative path would run whatever the submitter put
there. As with jobs, no shell is involved; name one if you need its features,
and read the values from the environment, never by pasting them into text:

  on_stop = ["/bin/sh", "-c",
             'printf "%s %s\\n" "$QEX_JOB_NAME" "$QEX_STATE" >> "$HOME/qex.log"']

The hook's environment carries (empty when there is no value):

  QEX_JOB_ID        the job's id
  QEX_JOB_NAME      its name, in the safe form `qex list` shows
  QEX_STATE         the state it ended in
  QEX_EXIT_CODE     its exit code, when it exited by itself
  QEX_SIGNAL        the number of the signal that ended it, if any
  QEX_ELAPSED_SECS  how long it ran
  QEX_CWD           its directory
  QEX_JOB_DIR       the directory of its record and logs
  QEX_ATTEMPTS      how many times it was started
  QEX_MAX_RSS       its peak memory in bytes
  QEX_TAGS          its tags, separated by spaces

Values arrive only through the environment, never on a command line, and qex
builds no text for a shell. A job called `x; rm -rf ~` is therefore only
ever a name, no matter what the hook does.

QEX_JOB_NAME holds the SAFE form (letters, digits and `-_.` only), the only
form qex ever shows. A raw name could hold terminal escape codes that rewrite
the screen of whoever reads the notification. For the name as typed, read
status.json in QEX_JOB_DIR. In QEX_TAGS and QEX_CWD each control character is
replaced by a space.

QEX_EXIT_CODE is the JOB's code, and it is empty when something stopped the
job, since such a job produced no code. Check QEX_STATE first; it holds the
word `qex status` prints. Command exit codes are in `qex help exit-codes`.

`on_stop_states` chooses which endings notify. The default covers every state
of a job that ran, plus `expired`, because a job that gave up waiting never
ran and nothing else would mention it. `cancelled` and `skipped` are left out:
you cancelled it yourself, and one failure in a twenty-stage pipeline would
otherwise notify twenty times. Add them if you want them. Failures only:

  on_stop_states = ["oom", "failed", "timeout"]

Nothing the hook does can harm the queue. It runs after the final record is on
disk, so the job already has its result, its capacity is free, and the next
job can start before the hook does anything.

qex runs the hook at most once per job. The only gap is a crash exactly
between writing the final record and starting the hook: that notification is
lost and not retried, because a duplicate is worse than a miss.

A hook that runs past `[hooks] timeout` is sent TERM and later KILL; it runs
in its own process group. Its output goes through a pipe (never straight to a
file), and after 1MB qex stops reading, closes the pipe and stops the hook.
That 1MB cap is fixed and unrelated to `[logs] max_bytes`; it only bounds the
hook's output streams, not files the hook opens itself. A failing hook never
changes the job or its `error` field.

A hook is not a job: it gets no `[politeness]` settings (a notification is
FOR the person), it is not placed in the job's cgroup (no `[enforce]` limit)
and gets no claim variables (it claims nothing).

The configuration is read afresh for every job that stops: a removed hook
stops running and a new one starts working at once, without restarting
anything. The hook's output is saved as `hook.log` in the job directory;
`qex logs ID --hook` shows it together with qex's verdict (did not start, was
too slow, or exited with an error). Example hooks ship in contrib/hooks/.

Pools
-----

A pool is a name with a total. Jobs claim units with `--claim NAME=N`;
`--lock NAME` is short for `--claim NAME=1`.

A pool with `devices` also has a capacity per device. qex then decides WHICH
devices a job gets, puts the indices in `QEX_<NAME>_DEVICES`, and in the
variable named by `env` when there is one.

Give either `count` or `devices`, never both: `devices` when the job must
know which device is its own, `count` when a number is enough. `cpu` and
`mem` are not allowed as pool names; those live in `[budget]`.

Pools you declare are accounted across every user of the machine, because
each coordinator advertises which units and device indices it gave out. A name
that is NOT declared is a lock, and a lock only exists inside your own queue.

qex talks to no driver. Devices come from this file alone, so a machine
without CUDA or any driver library still schedules GPU claims correctly.
`qex pool` can write the `[[pool]]` section for the GPUs it finds.

The default job size
--------------------

A submission without `--cpu` or `--mem` takes `[defaults]`. Without those
keys, a job gets 1 core and an equal share of memory, i.e. total memory
divided by the number of cores (at least 256MB). On 16 cores and 32GB that is
1 core and 2GB, so the default grows with the machine.

Capping a job's output
----------------------

`[logs] max_bytes` is how much of ONE stream of ONE job qex keeps: by default
32MB of stdout.log and 32MB of stderr.log.

The cap is applied WHILE the job writes, so a job producing 400MB never puts
400MB on disk. This matters because qex is meant to run unattended, and the
same disk holds every job's record.

qex keeps the beginning (start-up messages, settings) and the end (where the
failure usually is) and puts one marker line between them with the number of
bytes and lines that were left out. `qex status` and `qex logs` report the
same numbers, and `qex status --json` has them in `logs_dropped`.

`max_bytes = "0"` (or "none", "never", "unlimited") removes the cap, and a
job may then fill the disk.

Each job's supervisor reads this key once, when the job starts. Changing it
affects jobs that start afterwards, not one that is already writing. To
apply a new cap to a running job, stop it and `qex rerun` it.

The claim inside the job
------------------------

A claim steers the queue, not the job: a program that asks how many cores
there are still sees the whole machine. So qex also writes the claim into the
job's environment, where most runtimes look first:

  your scripts    QEX_CPU, QEX_MEM, QEX_MEM_MB (e.g. make -j"$QEX_CPU")
  Go              GOMAXPROCS, GOMEMLIMIT
  OpenMP          OMP_NUM_THREADS (C, C++, Fortran)
  numerics        OPENBLAS_NUM_THREADS, MKL_NUM_THREADS, NUMEXPR_NUM_THREADS
                  (numpy, pandas and the libraries under them)
  macOS           VECLIB_MAXIMUM_THREADS (Accelerate)
  Rust            RAYON_NUM_THREADS, CARGO_BUILD_JOBS
  Julia           JULIA_NUM_THREADS
  .NET            DOTNET_PROCESSOR_COUNT
  Polars          POLARS_MAX_THREADS
  Node.js         NODE_OPTIONS, with three quarters of the claim

qex sets these only if you passed `--cpu` AND `--mem` yourself. A default or
learned claim is not your decision, and a job told "one core" would run
single-threaded. A variable that is already set is never overwritten.

`[claims] also` can add two more. Each has a cost, so neither is on by
default:

  java   sets JAVA_TOOL_OPTIONS=-XX:ActiveProcessorCount=N -XmxMm
         every JVM then prints "Picked up JAVA_TOOL_OPTIONS: ..." on stderr,
         and that line lands in the job's log
  make   sets MAKEFLAGS=-jN
         a Makefile's own -j still wins, so this only changes Makefiles that
         never asked for parallelism, and one with missing dependencies may
         then break

`export_env = false` turns all of this off; `--no-limit-env-hints` does so
for a single submission.

Killed for memory
-----------------

When the kernel kills a job for exceeding its memory limit, the conclusion
is simple: the claim was too low. With `[enforce] mode` set to soft or hard,
and enforcement ACTIVE, each job runs in a cgroup of its own, so qex can
PROVE the kill was this job's. It then multiplies the claim by `growth`,
sends the job back through the queue, and tries again, up to `on_oom` times.
With the defaults that is two raises, ending at four times the first claim.

This is counted apart from `--retries`. Retries are for faults outside the
task and you chose how many; a wrong claim is usually qex's own doing, so qex
fixes it without spending your retries.

The claim is never raised beyond `[budget] mem`. A job already claiming the
whole budget stays `oom`, and its record says it needs a bigger machine or
budget. The raised claim goes through the QUEUE again, since the queue never
admitted it before.

The retry IS the original job: it keeps its id, its record and its pair of log
files, where a `--- attempt N ---` line opens each attempt. The job sees its
new claim in QEX_MEM and the other claim variables, `qex status` shows the
count in `attempts`, `--max-queue-time` does not expire the retry (the job
already ran), and the stop hook runs once, for the state the job finally ends
in.

With `mode = "off"` (the default) or when enforcement is NOT ACTIVE, qex
only sees the counter of your whole login session, which also rises when the
kernel kills some OTHER program of yours. It still reports `oom` if the
evidence points at the job, but it raises nothing and starts no new attempt:
the machine may simply have been full while this claim was right. Set
`on_oom = 0` to turn the correction off. `qex help enforcement` has the
details.

Queue order
-----------

The queue is ordered by `--priority`, then by submission, and is run as a
RESERVATION WITH A BOUNDED BYPASS, not in strict order.

`[queue] max_bypass` is how many jobs may start ahead of the job at the front
(default 2). Once that many have passed it, qex reserves capacity for the
front job and starts nothing more, which stops a flood of small jobs from
starving a big one.

`max_bypass = 0` means no job ever overtakes a front job that HOLDS capacity:
strict order for those, at the price that one large job blocks everything
behind it while it waits.

qex only holds capacity when it knows the wait will end: when jobs of THIS
queue occupy it, or when a large job waits for an idle machine. When the
holder is another user, or a program that qex does not manage, qex keeps
starting the jobs behind the front job, because it cannot make that holder go
away. The overtake count survives a change of holder, which makes the front
job un-passable in the very turn that the other user lets go.

Jobs held up by a dependency, a lock or a pause never reserve anything:
they are not using capacity, and a paused queue starts nothing anyway.

Overtaking never reorders the queue. The front job starts before everything
behind it as soon as it can.

Memory enforcement
------------------

`[enforce] mode` decides whether a claim is also a LIMIT:

  off    the claim only steers the queue; no limit (default, and the only
         mode on macOS)
  soft   memory.high = claim: the kernel slows the job down and reclaims at
         the claim; memory.max = claim x mem_overcommit stops it for good
  hard   memory.max = claim (and no swap): the kernel kills the job at its
         claim

soft and hard need Linux with cgroup v2 and a systemd user manager that
delegates the memory controller; qex puts every job into a systemd scope of
its own. Where that is impossible, qex runs the job unlimited, prints a
warning, and `qex config show` says NOT ACTIVE with the reason. qex never
claims a limit it did not apply. `qex help enforcement` explains it all.

When the coordinator rereads the file
-------------------------------------

The coordinator reads the file when it starts and again whenever the file
changes. It waits until the content has stopped changing for about half a
second before using it, so a file still being written is not taken halfway:
a half-written `cpu = 16` can read as `cpu = 1`, and keys the writer has not
reached yet would silently fall back to their defaults. New values apply to
jobs that START afterwards; a running job keeps the claim it started with.

The safe way to edit is to write a temporary file and rename it over this
one, which replaces the whole file in one step.

A file qex cannot use never turns into defaults. With a syntax error, an
empty or missing file, or a path that is not a regular file, the coordinator
keeps its previous values and `qex info` reports the problem. Correct the
file and the coordinator will pick it up by itself.

Only a regular file, or a symbolic link to one, is accepted. Opening a FIFO
waits for a writer and a device may never end, so qex refuses any other kind
of path at once.

A key added by a NEWER qex is unknown to an older coordinator, which will
refuse the file and keep its old values. Upgrade qex first, replace the
coordinator (`qex info` shows its pid; `kill` it), and add the new key last.
"""
