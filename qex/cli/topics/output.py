"""`qex help output`: JSON, the files of a job, logs, and cleaning up."""

from __future__ import annotations

TEXT = """\
qex output and files
====================

JSON
----

Any command that shows data accepts `--json` and then prints one JSON
document:

  qex list --json
  qex status ID --json
  qex wait ID --json

The formats are described by JSON Schemas:

  qex schema status     the job record
  qex schema job        a job file
  qex schema pipeline   a pipeline file
  qex schema event      one line of `qex events --json`

Records may gain fields in later versions; ignore the ones you do not know.

What a job leaves on disk
-------------------------

Each job gets a directory:

  ~/.local/state/qex/jobs/<uuid>/
    spec.json     what was asked: command, environment, claims (mode 0600)
    status.json   what happened: state, exit code, times, measured use
    stdout.log    the job's standard output
    stderr.log    the job's standard error

While a job is over the output cap, a `stdout.log.tail` or `stderr.log.tail`
holds the most recent output; when the job ends qex appends it to the log and
deletes it.

The directory is mode 0700, because spec.json may contain secrets.

status.json is the authoritative record. It is replaced in one atomic step,
so a reader sees either the old or the new content, never a mix. `qex wait`
reads it directly when no coordinator is running.

Reading logs
------------

`qex logs` and `qex status` share these ways of picking lines:

  qex logs ID                       both streams, last 500 lines each
  qex logs ID --all                 everything
  qex logs ID --stdout              one stream (or --stderr)
  qex logs ID --tail 200            the final 200 lines
  qex logs ID --head 20             the first 20 (a failure at start-up)
  qex logs ID --lines 400:430       lines 400 to 430
  qex logs ID --number              prefix each line with its number
  qex logs ID --grep ERROR          only matching lines
  qex logs ID --grep ERROR -C 3     with 3 lines of context either side
  qex logs ID --grep 'a.b' --fixed  treat the pattern as plain text
  qex logs ID --max-matches 20      show 20 matches, count the rest
  qex logs ID --follow              new output as the job writes it
  qex logs ID --follow --tail 30    the final 30, then whatever comes
  qex logs ID --follow --grep ERROR matches as they arrive
  qex logs ID --hook                the stop hook's output and verdict

Everything is bounded. A search reports how many lines matched, so a
pattern matching 3000 lines tells you it is too broad.

The output cap
--------------

A job may write more than `[logs] max_bytes` (32MB per stream by default).
qex then keeps the beginning and the end of the output and writes a single
marker line between them that counts the bytes and lines left out.

Those lines are NOT on disk; `--all` cannot bring them back. `qex status`
and `qex logs` tell you how much is missing, and `qex status --json` puts
the numbers in `logs_dropped`.

Nothing is removed until the output actually reaches the cap. A job that stays
below it (less about 2KB qex keeps free for its own notes) is stored whole,
and a retried job still has the output of its earlier attempts. Beyond that
point, exceeding the cap by one byte or by a gigabyte gives the same kind of
file: qex trims while the job runs, when nobody can know how much more is
coming.

The log file shrinks at the moment the cap is reached. `qex logs --follow`
notices, says so, and carries on from the new end.

If a job must keep everything, raise `[logs] max_bytes`, or have the job
write to a file of its own.

A job's output is a pipe
------------------------

The supervisor reads the job's output through pipes and writes the files
itself. To the job, stdout and stderr are pipes, not regular files. Almost
no program notices, but three things differ:

  - lseek fails with ESPIPE, and fstat reports a FIFO, so a program that
    seeks in its own output, or asks where it is, gets an error;
  - two processes of one job writing more than 4096 bytes at once can have
    their lines interleaved, where a regular file kept each write whole;
  - isatty is false, as it would be with a file.

A program that needs a real file can have one:

  qex submit -- sh -c 'exporter --out-file stats.txt > stats.log'

A pipe stays open while ANY process holds it. A job that leaves something
behind (`setsid`, `nohup ... &`, a server a test started) keeps its output
open after the job itself ended. qex waits 30 seconds for the pipes to close
and then writes the result anyway, because a late record beats a wait
without end. `logs_dropped.incomplete` is then true and `error` warns that a
log may lack its final part. The job's state is not affected. To avoid the
delay, give such a process its own output:

  qex submit -- sh -c 'setsid ./server > server.log 2>&1 &'

Prefer `qex logs --follow --grep` to piping into grep: grep buffers its
output unless told `--line-buffered`, so you would see nothing for a long
time. qex writes each line as soon as it has read it.

Watching the queue
------------------

  qex events --json     one line per change of state, as it happens;
                        for programs (see `qex help events`)
  qex top               jobs, their claims and their use right now
  qex top --once        a single page, for scripts
  qex top -i 5          refresh every 5 seconds

The CPU column is cores in use right now; compare it with the claim column to
spot a claim much larger than what the job needs. `qex top` never starts a
coordinator, and shows the jobs from disk when none runs.

Deleting records
----------------

  qex clean ID                    one job
  qex clean completed             every job that succeeded
  qex clean done                  every job that has stopped
  qex clean --state failed        every job in one state
  qex clean --cwd                 jobs started in this directory
  qex clean --under               jobs started here or further down
  qex clean --under /srv          jobs started in /srv or further down
  qex clean --auto                stopped jobs from here and below that
                                  ended more than an hour ago (the most
                                  recent one is often the one you read)
  qex clean --older-than 7d       jobs more than a week old
  qex clean --all                 all jobs, whatever their age
  qex gc                          every record that stopped more than a
                                  day ago, in any directory, plus job
                                  directories with no record; try
                                  `--dry-run` first; `[gc] keep` sets the age
  qex du                          how much space the records take, and
                                  which jobs take the most

Before cleaning, `qex list --cwd` (or `--under`) shows what would go.

A job that a queued job still depends on is NOT finished as far as deleting
goes, whatever its own state: the waiting job reads that record to decide
whether to run and to explain why not. Both `qex clean` and `qex gc` leave
such a record in place, tell you why, and remove it once the dependent job
has stopped.

`qex clean` removes the job's directory; it never stops a running job.

After a record is deleted, qex still remembers the job's id for a day, so
`qex status` can say that the job existed and its work was done, and an
agent does not repeat it. `[history] keep` changes how long.

`qex clean --all` deletes EVERY job of this user, including those of another
agent on the same machine. When others use qex too, clean by id.
"""
