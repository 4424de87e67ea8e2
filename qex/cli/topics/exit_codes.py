"""`qex help exit-codes`: the band, and why it exists."""

from __future__ import annotations

TEXT = """\
qex exit codes
==============

One table, obeyed by every command that reports the result of a job.

  0-96    THE JOB: its own exit code, unchanged
  97-127  QEX: about the queue or your wait, never about the job itself
  97      the job exited with a code of 97 or more; the record has it
  98      a signal ended the job, and qex did not see it as a stop
  99      the kernel killed the job for memory, and qex can prove it
  100     the job has not finished, so there is no result yet
  121     qex could not do what you asked; no job ran
  122     your wait was interrupted; the job carries on, attach again
  123     the job gave up in the queue (it reached --max-queue-time)
  124     your wait reached its own time limit; the job carries on
  125     something stopped the job: qex kill, qex cancel, or --timeout
  126     a job it depended on did not succeed, so it never ran
  127     the id or word names no job, or more than one (qex lists them)
  128+    qex ITSELF was killed by a signal. Nothing is known about the
          job, which may well still be running; attach again.

98 means a signal ended the job and qex cannot attribute it to a stop. A
kill, a cancel or a timeout gives 125, and so does a `kill -9` sent from
OUTSIDE qex, because qex cannot know who sent it. Either way the record keeps
the signal number.

99 requires proof. qex has it when `[enforce] mode` is soft or hard and
ACTIVE, because the kill is then counted in the job's own cgroup (see
`qex help enforcement`), or when the kernel's record points at the job.
WITHOUT ENFORCEMENT A CLAIM IS A PROMISE, NOT A LIMIT: a job claiming 64MB
that uses 2GB is simply not stopped, and never gives 99.

THE CODE SAYS PASS OR FAIL; THE RECORD SAYS WHY. An agent that must tell
"the job failed" from "my wait ended" reads `qex status`. An agent that only
needs pass or fail reads the code.

These commands use the band: `qex wait`, `qex run`, `qex status` with --wait,
--follow or --quiet, and `qex submit` with --wait or --follow. A command-line
mistake in one of them is 121, not 2. `qex submit`, `qex pipeline` and `qex
rerun` give 0 once the work is queued. With several jobs (`qex wait A B`, a
group id) the code is the first non-zero one, in the order the jobs were
named.

All other commands use 0 for success, 1 for failure, 2 for a command line qex
cannot parse, and 127 when the job you named does not exist. `qex list` never
reports on a single job, so there is no ambiguity there. `qex watchers` gives
1 when it found a monitor loop.

Why a band, and why 97 as a catch-all
-------------------------------------

A job may exit with anything from 0 to 255, so any code qex picks for itself
is also a code some job could return. No free number exists.

The catch-all gets around that. A job that exits 124 on its own is reported
as 97, and `qex status` holds the real 124; a wait that ran out of time
reports 124. Each code then has exactly one meaning.

The price is small but real: at the shell, a job exiting 97-255 loses its
precise code, which remains in the record. A wrapper that looks only at `$?`
sees 97 for all of them and needs `qex status --json` for the number.
Programs exiting in that range are rare, and most use the same conventions
qex does: 126 when a program cannot be executed, 127 when it does not exist.

The band starts at 97 and leaves 0-96 to the job, so that the two codes a
shell already uses for itself, 126 and 127, fall inside it, with room for
qex's own codes in between.

Why 128 and above belong to qex
-------------------------------

A process killed by signal N conventionally exits 128+N, so a memory kill is
usually 137. That cannot work here:

  qex wait ID
  ^C
  echo $?        # the shell says 130, yet THE JOB IS STILL RUNNING

A process that is dead cannot report an exit code of its own. So 128+N from a
qex command can only mean that the qex COMMAND died, and then it says nothing
about the job. qex reports 98 for a job a signal ended (the record names the
signal), 125 for a kill, cancel or timeout, and 99 for a proven memory kill:
qex knows those causes, and each calls for a different fix.

During a wait, qex catches Ctrl-C and SIGTERM, so the common case is 122 with
an explanation rather than a silent 130. A SECOND Ctrl-C stops the command at
once, as usual. Nothing can catch SIGKILL, so if the OOM killer takes your
waiting command you still see 137, which by this table says exactly the truth:
your command died, your job did not.

`qex run` and `qex submit --wait`
---------------------------------

When the job actually RAN, both exit with its code: `qex run -- sh -c
'exit 9'` exits 9.

`qex run` copies the job's output to your terminal. `qex submit --wait`
leaves it in the log file, so an agent's context stays small; pull out what
you need with `qex logs --grep`.

Their jobs are ordinary jobs, so `qex kill` or `qex cancel` from ANOTHER
command can stop them. Such a job never produced an exit code, so the
command returns 125 and not 1, meaning that something cut the work short
before it could finish. A line on stderr names the cause, including
when it was not this command that stopped the job.

Through a dedupe key, `qex run` may end up attached to someone else's job.
A signal then ends only your wait, with 122, and leaves the job alone.

`qex wait --next`
-----------------

`--next` returns ONCE, when the first job stops. The others then have nobody
waiting for them, so wait again. qex lists them on STDERR in a line meant for
people; it is not a data format. Your program passed those ids in, so it
already has them, and with `--json` the record of the job that stopped goes
to stdout.
"""
