"""`qex help resources`: claims, the budget, pools and why a job waits."""

from __future__ import annotations

TEXT = """\
qex resources: claims, budget and pools
=======================================

Claims
------

Every job claims some cores and some memory, given with `--cpu` and `--mem`
or under `[resources]` in a job file. A claim is your estimate of the job's
PEAK use. qex adds up claims to decide how many jobs can run side by side,
which is how two agents on one machine avoid starting too much at once.

Words instead of numbers
------------------------

  guess, half, auto    half of the budget
  max, full, all       the entire budget

The word is turned into a number against the budget at submission time, so
the job's record always holds an exact value.

`guess` suits a task of unknown size: two such jobs run together and a third
waits. `full` suits a task that needs the machine to itself; everything else
waits for it.

Without a claim, qex uses `[defaults]` from the configuration; without that,
1 core and the machine's memory divided by its core count.

By default a claim does NOT limit the job; it only steers the queue. To make
it a limit on Linux, see `qex help enforcement`.

Pools: GPUs, VRAM and counted locks
-----------------------------------

Cores and memory are two quantities. Anything else a machine has a number of
is a POOL: a name, a total and, when a job must know WHICH unit is its own, a
list of devices.

  --gpu N           N devices from the pool `gpu`
  --vram SIZE       SIZE on EACH of the GPUs the job receives
  --claim NAME=N    N units of the pool NAME (NAME=N:SIZE adds a size)
  --lock NAME       the same as --claim NAME=1; NAME is any text you can type,
                    a path too (`--lock target/debug`); `--lock NAME:N` takes N

  qex submit --cpu 8 --mem 24GB --gpu 1 --vram 16GB -- python fit.py
  qex submit --cpu 16 --mem 64GB --gpu 2 -- python fit.py    # two whole GPUs
  qex submit --claim net=1 -- ./mirror.sh
  qex run --lock target/debug -- cargo build

Pools are declared in `~/.config/qex.toml`; `qex help config` shows how.

VRAM is per device, never summed
--------------------------------

A job needing 40GB on one GPU cannot use two 24GB cards. qex rejects such a
job at once and says it could never start.

`--vram SIZE` is what the job needs on EACH device. Without `--vram` the job
takes each of its devices whole. That is the safe default: if a claim with no
size took nothing, qex could stack any number of unbounded jobs on one card.
`[defaults] vram` changes it.

Which device, and how the job learns it
---------------------------------------

qex picks the devices with the most room left, and the lower index when
two are equal. The job then finds, for example:

  CUDA_VISIBLE_DEVICES=1,3   # because pool `gpu` names this variable
  QEX_GPU_DEVICES=1,3        # always set for an indexed pool
  QEX_GPU_VRAM=17179869184   # bytes per device
  QEX_CLAIM_NET=1            # for a pool without devices

and the record shows the same thing:

  qex status ID              # a line `devices: gpu 1,3`
  qex status ID --json       # see `assigned`

Frameworks pick up the variable with no code change. The record is
what you read LATER to explain a failure, because the record stays while the
environment disappears with the job.

Do not set CUDA_VISIBLE_DEVICES yourself for a job that claims a GPU; qex
refuses it, since the two values would not agree.

No driver involved
------------------

Devices come only from the configuration. A machine without CUDA or any
driver library still schedules GPU claims correctly: a count in the
configuration, a claim on each job, and the same sums that admit cores and
memory.

If two users configure different device counts, they disagree, just as they
can disagree about `[budget]`. Sharing a machine this way is cooperative.

A claim larger than a pool is always refused
--------------------------------------------

Unlike cores and memory: an over-sized memory job can still run alone and
swap, and that result teaches you something. An idle machine does not grow a
fifth GPU, so `--gpu 8` against a pool of 4 is an error at submission,
whatever `[queue] oversized` says.

When a job starts
-----------------

A job starts once ALL of these hold:

  1. the claims of the running jobs plus this one fit in the budget;
  2. what other users have claimed still leaves enough room;
  3. every pool it claims has enough free units, or free devices with
     enough capacity each;
  4. free memory stays above `reserve_mem` after the claim, and memory
     pressure is below `max_pressure`.

A waiting job explains itself in `blocked_reason` (`qex status`, `qex list`).

What holds a waiting job
------------------------

`blocked_reason` names what holds the capacity. There are four kinds of
holder, and they affect the jobs behind differently:

  1. Jobs of THIS queue. They will stop, so once `[queue] max_bypass` jobs
     have overtaken the front job, qex holds capacity for it.
  2. Another user. qex has no control over them, so the wait has no known
     end; qex keeps starting the jobs behind and holds nothing.
  3. Something outside qex uses the memory, or pressure is high. Same
     as 2.
  4. The job's own size. A job bigger than the budget waits for an idle
     machine, or stays queued if the configuration says so.

Every waiting job has a reason of ITS OWN. A job stuck behind a front job
that qex holds capacity for says so and names that front job.

`passed_by` counts how many jobs overtook the front job, and `blocked_since`
says when it got to the front. That count survives a change of holder: a job
that waited an hour on another user keeps it, and cannot be overtaken any
more from the moment one of this queue's jobs takes over as holder.

Is the queue healthy?
---------------------

  qex info

Its last line answers that. The queue is fine if a job started recently, OR
if the line blames something outside this queue (another user, the machine).
It is stuck when nothing has started and the blame falls on a job of this
queue.
`qex top` shows the same line at the top.

Jobs bigger than the budget
---------------------------

A claim may exceed the whole budget. Such a job can never pass test 1, so by
default qex starts it alone, when nothing else is running. It may swap, use
every core, or be killed for memory; each of those is information for you,
while a job that waits for ever tells you nothing.

Its record has `forced` = true and the explanation in `forced_reason`.
`qex submit` also warns on stderr right away, while stdout still carries only
the id. `[queue] oversized = "reject"` or `"queue"` changes this.

When to look at measured usage
------------------------------

qex measures every job and stores the result in its record. You do not need a
trial run, and you do not need to inspect the numbers after each job.

Claim `guess` and run the real task. Look at the measurements only when BOTH
are true:

  1. the same kind of task runs again and again, and
  2. jobs wait in the queue, or one was killed for memory.

  qex status ID --json

`usage.max_rss` is the peak in bytes and `usage.cpu_secs` the CPU time. A
task that always uses far less than it claims wastes capacity: write an
accurate claim into a job file and more jobs will fit. A task killed for
memory needs more, and with enforcement active qex raises its claim and runs
it again by itself.

For a one-off task, skip all of this.

Other users
-----------

Each coordinator publishes its current claims under `/tmp/qex` (`[peers]
dir`) and reads the other users' files before it starts a job. No
administrator rights are needed. It is cooperative: another user could
publish wrong numbers. qex also checks the machine's free memory, which
catches load that no coordinator reports.
"""
