"""`qex help agents`: the page an agent reads first."""

from __future__ import annotations

TEXT = """\
qex for agents
==============

qex takes a long task off your hands. It puts the task in a queue, starts it
once the machine has room, writes the outcome to disk, and gives you a single
command that waits for it. That record outlives your session, your terminal
and even the coordinator process.

Pick the command
----------------

  you want                  a new job                 a job you already have
  the output as it comes    qex run -- CMD            qex status ID --follow
                            (= submit --follow)
  the record at the end     qex submit --wait ...     qex status ID --wait
  only the exit code        qex submit --wait -q ...  qex status ID --wait -q
  several jobs at once                                qex wait ID ID ...

All of them exit with the job's code (see below). The only difference is what
they print: the job's output, the job's record, or nothing at all.

`-q/--quiet` hides the record and the queue narration. `--json` prints the
record as JSON on stdout. Neither one hides a problem with the WAIT itself
(no such job, the wait hit its limit, a signal ended the wait): those lines
carry the id you need to attach again, and they go to stderr so they never
mix with JSON.

`--follow` starts from the first line of the log, so for a job that ended
long ago you get the whole thing. For such a job prefer `qex logs ID --tail`
or `qex status ID --wait`.

For long work, use `qex submit --wait`
--------------------------------------

  qex submit --wait --cpu 4 --mem 8GB --id-file fit.id -- python fit.py

Why this form:
- It is ONE command. Submitting and then waiting is two, and the second one
  is easy to forget: a job without a waiter keeps running, and its result
  goes unread.
- Start it as a background task in your harness. The harness reports when
  it finishes; no timer or follow-up command is needed.
- The job's output goes to its log file, not into your context. When the
  job stops you get the record: state, exit code, resources used, and the
  last lines of stdout and stderr.
- The id file reaches the disk BEFORE the wait begins. Whatever interrupts you,
  `qex status "$(cat fit.id)" --wait` gets you back.

Every job you submit should end up with a wait. `--wait` does that for you.

`qex run` copies the job's output to your terminal as it comes. Good for a
short task you watch; bad for a long one, because the output fills your
context. Ctrl-C or SIGTERM on `qex run` ends the JOB itself. The rest of the
table only observes: Ctrl-C there ends your wait with code 122 and the job
keeps going.

With `--wait` and `--follow` the id is printed on STDERR, because stdout is
for the result; pick it up there, or use `--id-file`.

Exit codes
----------

  0-96     the job's own exit code, passed through unchanged
  97-127   about qex (the queue or your wait), never the job itself:
  97       the job exited with a code of 97 or more; the record has it
  98       a signal ended the job, and it was not a qex stop
  99       the kernel killed the job for memory, and qex can prove it
  100      the job has not finished, so there is no result yet
  121      qex could not do what you asked; nothing ran
  122      your wait was interrupted; the job is still going
  123      the job gave up waiting in the queue (--max-queue-time)
  124      your wait ran out of time; the job is still going
  125      the job was stopped: qex kill, qex cancel, or its --timeout
  126      the job never ran because a job it needed did not succeed
  127      the id or word names no job, or several; qex lists them
  128+     qex ITSELF was killed by a signal; the job may still be
           running, so attach again

The code tells you pass or fail. The record tells you why. When you need to
know whether the job failed or only your wait ended, read `qex status`. A 125
does not mean your work was wrong: another agent on the machine may have
stopped it, so read the stderr line before re-running.

Commands that do not report on one job (`qex list`, `qex logs`, ...) use the
ordinary 0, 1, 2 and 127. `qex help exit-codes` explains the band.

When qex cannot start at all
----------------------------

Some harnesses run each command in a SANDBOX that blocks the Unix socket qex
talks over. qex says so and names the directory it tried. You cannot fix
this from inside: the permission belongs to whoever runs you. Show them the
page docs/sandbox.md that ships with qex (installed packages put it under
/usr/share/doc/qex/), and stop there.

Never write a monitor loop
--------------------------

A monitor waits for a STAND-IN for the work: a process name, a log line, a
file. A stand-in can stay true, or stay false, for ever after the work is
gone, and the loop has no way to notice. These all look careful:

  while pgrep -f train.py; do sleep 60; done
      The shell running this loop has "train.py" in its own command line,
      so the pattern finds the loop itself and never goes quiet.

  until grep -q FINISHED out.log; do sleep 60; done
      Fine until the program that would write FINISHED dies first.

  while [ "$(ps -eo args | grep -c trainer)" -gt 0 ]; do sleep 300; done
      A COUNT on a shared machine: another agent's trainer keeps it above
      zero for as long as that agent works.

The last two have no typo in them. The flaw is the stand-in: when the work
stops, the evidence stops with it in a way the loop cannot see.

qex does not guess. It is the job's parent and reaps exactly that process
with waitpid, so it always learns the outcome. Looking for the coordinator?
`qex info` asks it directly; do not grep the process list for it.

  qex watchers       lists the monitor loops running on this machine

Your session may end; the job will not
--------------------------------------

Your job does not descend from your shell, nor from you. If you are stopped,
your terminal closes, or the coordinator is replaced, the job runs on and
still writes its result. Only your wait ends, and the id brings you back:

  qex submit --wait --id-file compile.id -- make      # you are stopped here
  qex status "$(cat compile.id)" --wait               # a later session

Keep the id file somewhere that lives longer than your session: the project
directory or your home. Not /tmp, and not your harness's scratch space; qex
warns when you pick such a place. Lost an id? `qex list --cwd .` shows the
jobs started from this directory.

Many jobs at once
-----------------

Give every job its own `qex submit --wait`. Each harness notification then
names one job, and no job is left with nobody to read its result.

To watch many results in one place, read the event stream:

  qex events --json       # a JSON line for each state change

Remember the `stream_id` from the first line and the highest `seq` you have
handled; pass both to `--since` when you come back. See `qex help events`.

`qex wait A B C` blocks until all of them stop, printing a line for each.
`qex wait --next A B C` returns as soon as ONE of them stops. The others
then have nobody waiting on them, so wait again; qex lists them when it
returns.

Claims: --cpu and --mem
-----------------------

Always pass `--cpu` and `--mem`: the sum of the claims decides how many
jobs share the machine, which is what keeps two agents from overloading it.

  guess, half    half of the budget; two such jobs fit together
  max, full      the whole budget; the job runs on its own

DO NOT launch a small trial run to size a task. It costs time and measures
something else. Claim `guess` and start the real thing:

  qex submit --wait --mem guess --cpu guess -- ./simulate   # first run
  qex submit --wait -- ./simulate                           # later runs

qex records what each job actually used and offers it as the claim for the
next run of the same command in the same directory: the LARGEST peak seen,
plus a margin. A job the kernel killed for memory counts as a floor: the
next claim lands above it, and a later, smaller run does not undo that.
`qex status` tells you where a claim came from; `qex status --json` has
`usage.max_rss` and `usage.cpu_secs`.

A claim above the entire budget is still run, alone, once nothing else is
running, and the record is marked `forced`. It may swap or be killed
for memory; either outcome is information.

A memory kill that qex can PROVE (it gave the job its own cgroup, see
`qex help enforcement`) makes qex raise the claim and run the job again by
itself. You do not need `--retries` for that.

Make submissions idempotent: --dedupe-key
-----------------------------------------

If you lose context and run your script again, qex would happily start a
SECOND copy of a four-hour job next to the first, both writing the same
files. A key prevents that:

  qex submit --wait --dedupe-key fit:$(pwd) -- python fit.py

While a job with that key is queued or running, another submission with the
same key starts nothing: qex prints the existing job's id and exits 0, so
your script carries on unchanged. Do NOT check `qex list` and decide for
yourself. That check is a stand-in too, and another agent can submit between
your look and your submit. The coordinator does the check and the submit as
one step.

Make the key name the work AND the place, like `build:$(pwd)`. qex does not
compare commands, only keys, so different work needs different keys. The key
frees up when the job stops; `--dedupe-window 1h` keeps it for an hour after
a SUCCESS as well. A wait obtained through a key is a wait on someone else's
job, so Ctrl-C only ends your wait (122).

One job per step
----------------

Do not chain every step in one script: you get one exit code and one mixed
log. Give each step a job and link them:

  B=$(qex submit --name build -- make)
  T=$(qex submit --name test --needs "$B" -- make check)
  qex status "$T" --wait

  --needs ID,ID   wait for these, and do not run unless all succeeded
  --after ID,ID   wait for these to stop, whatever their result

A step that cannot run ends as `skipped`, and `caused_by` in its record
points at the FIRST failure, so you go straight to the cause. For a skipped
step `qex wait` returns 126, for a failed one the step's own code: a script
can tell apart its own failure and one inherited from an earlier step.

An ID only has to exist, so a script may submit its last step even after an
earlier one failed. A NAME must match a job that is queued or running, since
a name could otherwise pick yesterday's job. Use ids in scripts and names when
you type. `qex pipeline FILE` gives the stages of one file private names; see
`qex help pipeline`.

Jobs that never start
---------------------

A job waits until there is room, and a claim no budget can satisfy waits for
ever. Put a bound on it:

  qex submit --wait --max-queue-time 45m -- make check

If it has not started by then, it becomes `expired` (code 123), and
`qex status` says what it was waiting for. No output exists, since nothing
ran. Time counts from the submission, across coordinator restarts.
There is no limit by default: qex will not throw away work someone asked for.

More options
------------

  --name NAME         a name for `qex list`, usable in place of the id
  --timeout 90m       kill the JOB after this long (`--wait-timeout` only
                      ends your wait; the job continues)
  --retries N         run again after a failure: same id, same record, each
                      attempt marked in the log
  --lock NAME         jobs with the same lock never run together (a build
                      directory, a port, a database)
  --nice N            -20..19, default 10; higher yields to people
  --gpu N             N devices from the pool `gpu`; qex picks them and sets
                      CUDA_VISIBLE_DEVICES
  --vram SIZE         SIZE on EACH of those devices; never summed across them
  --claim NAME=N      N units of pool NAME; `--lock X` is `--claim X=1`
  --env K=V           add or override one variable. qex copies your whole
                      environment and directory; use `--env-capture minimal`
                      when the shell holds secrets
  --job FILE          read the job from a TOML, YAML or JSON file
                      (`qex help job-file`)
  --each-line FILE    one job per input line, one group id; `{}` becomes the
                      line, as ONE argument, never a shell command
                      (`qex help each-line`)

Other commands
--------------

  qex list --json              every job, its state and why it waits
  qex status ID --json         one job in detail, with its last error lines
  qex logs ID --grep ERROR     just the lines you need from a big log
  qex kill ID                  stop a running job
  qex cancel ID                take a job out of the queue
  qex rerun ID                 run the same job again with a fresh id
  qex clean --state done       remove the records of finished jobs
  qex info                     the coordinator, the budget and the load
  qex pause / qex resume       hold the queue, or release it

Every command that shows data takes `--json`, and every command takes the
first characters of an id, or a job's name. `qex schema status|job|pipeline|
event` prints the JSON Schema of each format.

When the coordinator is older than your qex
-------------------------------------------

The qex program can be upgraded while an older coordinator keeps running. qex
asks the coordinator what it supports and REFUSES a job that uses an option
the coordinator cannot honour, because an unknown field would be dropped
without a word: a lock nobody enforces looks exactly like one that works.
The coordinator exits once no job is running, and the next command starts a
current one. Jobs survive that, since the replacement loads the very same
records. `qex version` shows what each side supports.

Reporting a problem
-------------------

Every section above exists because somebody reported a fault or measured
something. If qex surprised you, even in a small way (an option you looked
for, a message that misled you, an exit code you did not expect), report it
where your copy of qex came from; docs/index.md says where. Search existing
reports first and add to a matching one.

Include the whole command, qex's complete output (with `--json`), the result
you expected, and what `qex version` prints. NEVER paste `--show-env` output
into a public report: it contains your shell's environment.
"""
