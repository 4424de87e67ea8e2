"""`qex help states`: the life of a job."""

from __future__ import annotations

TEXT = """\
qex job states
==============

  queued      accepted; waiting for capacity
  starting    the supervisor has been launched; the job is being started
  running     the job is executing
  completed   it exited with code 0
  failed      it exited with a non-zero code (or could not be started)
  killed      `qex kill` stopped it, or a KILL/TERM signal did
  timeout     it ran longer than its `--timeout`
  expired     it waited longer than its `--max-queue-time` and never
              started: no output, no exit code
  oom         the kernel killed it for using more memory than allowed
  cancelled   it was taken out of the queue before it started
  skipped     a job it `--needs` did not succeed, so it never started;
              `caused_by` names the job that failed first

queued, starting and running are the only states that change. Every other
state is final.

oom and failed are different
----------------------------

`oom` means the kernel's out-of-memory killer ended the job. How much that
tells you depends on the evidence:

- With `[enforce] mode` soft or hard ACTIVE, the job has a cgroup of its own
  and the kill is proven to be this job hitting its claim. qex then raises
  the claim and runs the job again, up to `[retry] on_oom` times (2 by
  default), under the same id.
- Without that (the default), qex only has your login session's counter,
  which also moves when some other program of yours is killed. qex reports
  `oom` when the evidence points at the job, but changes nothing and starts
  no new attempt.

The record says which case applied (`oom_evidence`) and what you can do.

killed covers the unexplained too
---------------------------------

The kernel and `qex kill` use the same KILL signal. Without a cgroup of the
job's own, qex cannot tell a memory kill from any other KILL. It then says
`killed`, starts no new attempt, and the record notes that qex could not
tell.

expired and timeout are different
---------------------------------

`timeout`: the job ran too long; its log has whatever the job wrote before it
was stopped. `expired`: the machine never had room for it, so its log is empty.
The `error` field says what it waited for and for how long.

`qex list --state NAME` shows the jobs in one state; `done` selects every
final state and `active` the others.
"""
