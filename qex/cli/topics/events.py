"""`qex help events`: the event stream."""

from __future__ import annotations

TEXT = """\
qex events: a single stream for all jobs
========================================

  qex events --json

Prints ONE JSON object per line, one for each change, the moment it happens.
Read this instead of asking about each job in turn: an agent driving twenty
jobs reads one stream rather than issuing twenty commands over and over.

  qex events --json | while IFS= read -r line; do ...; done

No timer is involved. Each line is written when the change happens, and the
command uses no CPU while nothing changes.

Kinds of line
-------------

Every line has a field `event` naming its kind. Skip kinds you do not
recognise; a later qex may add more.

  stream   always the first line. `stream_id` names this stream; also the
           range of sequence numbers the coordinator still holds. KEEP the
           stream_id (see --since).
  job      one job's record changed (below)
  gap      some events were lost; this line says how many
  bye      the coordinator is shutting down and says why

A `job` line carries:

  seq        this event's number. KEEP the highest one you handled.
  time       when the change happened
  id, name   which job
  state      its state now
  previous   its state before, or null on a job's first line
  change     `state`, or `reason` when a queued job's wait reason changed
  job        the full record, identical to `qex status --json`

Because `job` is the complete record, the exit code, the measured usage and
the cause of a failure are all there; no follow-up command is needed.

A waiting job produces a line with `change` = `reason`, and
`job.blocked_reason` tells you what it waits for: memory, a lock, another
job. It arrives shortly after the job is queued, once the scheduler has
looked at it.

The stream shows what the coordinator observed
----------------------------------------------

Each supervisor writes its job's record and tells the coordinator. A job that
is over very quickly can reach `completed` before the coordinator has
reported `running`, and then there is NO `running` line: you see `starting`
followed by `completed`, whose `previous` says `starting`. The sequence you
read is still the true one. qex never invents a line for a state it did not
observe, because that would be a claim it cannot back up.

Picking up where you left off
-----------------------------

  qex events --json --since STREAM_ID:348   # from event 349 on
  qex events --json --since now             # only what happens next
  qex events --json --since start           # all that is still held

The default is `start`.

Keep TWO values, the `stream_id` from the first line and the highest `seq`
you handled, and pass them back as `STREAM_ID:SEQ` when you restart. As long
as it is the same coordinator, you lose nothing.

SEQUENCE NUMBERS BELONG TO ONE COORDINATOR. The coordinator exits when no
job is left, and the next command starts a fresh one, which counts from 1
again and emits one event per record it loads. Your 348 would then point at
an unrelated event.

Given the stream id, qex notices the change of coordinator, sends a `gap`
line saying so, and continues with what the new coordinator holds. The job
records themselves are the same.

SO A NEW COORDINATOR REPEATS SOME LINES. A job that finished while you were
away shows up again as `completed` with a new number. That is normal: the
coordinator retires when nothing runs, which is exactly when a reader tends
to be away. Act on `id` and `state`, not on the arrival of a line: remember
which states you already handled for each job, and handle each one once.

With a bare number (no stream id) qex cannot detect a new coordinator and you
may lose events silently. Always pass the stream id; `qex events` warns when
you do not.

If you read too slowly
----------------------

The coordinator keeps the most recent 512 events. It NEVER waits for a
reader and never grows its memory for one. A reader that falls behind loses
the oldest events, and a `gap` line tells it HOW MANY. Keep the reading loop
fast and hand the work for each event to another thread or process.

qex reports a gap instead of hiding it: a reader that silently missed
`failed` would wait for ever for a result that already came.

`missed` is the count, or null when qex cannot count: that happens when your
number belongs to another stream, and the two streams have nothing in common
to count by. `reason` explains what happened.

End of the stream
-----------------

The coordinator exits when no job is queued or running and no command has
arrived for an hour; an open reader does NOT keep it alive. It sends a `bye`
line first, and `qex events` then exits 0.

If the stream stops WITHOUT a `bye`, the coordinator died. `qex events`
prints a message on stderr and exits 1. The job records on disk are fine;
start `qex events` again to read the next coordinator's stream.

Options
-------

  --json          one JSON object per line (use this from programs)
  --since VALUE   start, now, STREAM_ID:SEQ, or a bare SEQ
  --count N       exit after N job/gap lines
  --timeout TIME  exit after this long, with code 124

An older coordinator
--------------------

A running coordinator may be older than this command and not know about
events. `qex events` then REFUSES to run, names the coordinator and shows how
to stop it. It will not hand you an empty stream instead, since a stream
with nothing in it looks just like a quiet queue.

`qex schema event` prints the JSON Schema of these lines.
"""
