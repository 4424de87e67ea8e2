"""`qex help pause`: holding the queue or a lock."""

from __future__ import annotations

TEXT = """\
qex pause and qex resume
========================

These commands let a person take the machine, or one resource on it, back
for a while.

  qex pause queue            hold the queue: no job starts
  qex resume queue           release it
  qex pause lock NAME        claim that lock for yourself
  qex resume lock NAME       give the lock back
  qex pause                  show what is paused
  qex resume                 the same as `qex resume queue`

Pausing the queue
-----------------

  qex pause queue --reason "benchmark run"

From then on qex starts NO job at all. There are no exceptions: every qex job
claims something, so there is no job that costs nothing, and "paused" stays
one plain fact you can act on.

JOBS ALREADY RUNNING CARRY ON. Each holds its capacity already, and stopping
it would throw its work away. To wait until the machine is quiet:

  qex pause queue --drain     # returns once no job is running

To stop a running job, use `qex kill ID`.

Pauses that end by themselves
-----------------------------

  qex pause queue --for 45m

Without `--for`, the pause lasts until someone runs `qex resume`. Every
command that lists jobs mentions it, because a forgotten pause means an idle
queue the next morning.

Pausing an already paused queue KEEPS the first pause's end and reason.
Otherwise a second command could quietly turn a 45-minute pause into one
without end. To change the end, resume first and pause again.

`--for 0` is an error (use `qex resume queue` to end one immediately).

The next attempt of a job with `--retries` is started by its own supervisor,
which honours the pause as well, so that attempt waits.

Pausing a lock
--------------

A lock names something only one job may use at a time (`qex submit --lock
gpu1`). Often a person needs that very thing for a while.

  qex pause lock gpu1

The lock becomes YOURS as soon as no job holds it. Jobs that need it wait,
and `qex list` says why:

  5c1d02aa queued   fit ...  waits for the lock `gpu1`, held by a person

Typing it is always safe: it does not fail when a job has the lock now. qex
records your request, that job keeps the lock until it stops, no other job
gets it, and then it passes to you. So it is safe to type at any time.

Surviving restarts
------------------

qex stores the pause in a file next to the job records, so it outlives the
coordinator: one that starts later finds it and keeps the queue paused.

Should that file be unreadable, qex HOLDS the queue and reports it, because an
unreadable file might contain a pause. `qex resume queue` writes a fresh file
and starts the queue.

A pause affects YOUR queue only, never other users of the machine; `qex info`
says so.

Pauses and expiry
-----------------

Pausing does not make jobs expire. `--max-queue-time` measures time spent
waiting for the QUEUE, and a person holding the machine is not the queue.
That clock stops while the queue is paused and resumes with it, so a
45-minute pause does not expire every job with a shorter limit. `qex status`
shows the paused time in `queue_pause_secs`.

This holds even if the pause ran out while no coordinator was running: the
next coordinator notices and credits the time.

Holding a LOCK, by contrast, leaves the clock running: a job waiting for a
lock expires the same way whoever holds it. Give such jobs a
`--max-queue-time` that covers your hold, or none.

Submitting still works during a pause: you get an id and exit code 0, and
the job's reason says the queue is paused.

Who may resume
--------------

Anyone able to reach this queue. Nobody owns a pause: a queue belongs to a
single user account, and whoever can reach it has access to all of its jobs
already. Each pause line shows the pid that asked for it, so you
can find out who did before resuming.

Where you see it
----------------

  qex pause           what is paused, until when, and who asked
  qex info            that line, plus the budget and the load
  qex top             that line, in the header
  qex list            that line, above the jobs
  qex wait ID         that line, before it starts waiting
  qex status ID       why that one job waits
"""
