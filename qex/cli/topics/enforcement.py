"""`qex help enforcement`: memory limits on Linux, and proven OOM kills."""

from __future__ import annotations

TEXT = """\
qex memory enforcement
======================

A claim always steers the queue. Whether it is ALSO a limit that the kernel
enforces is chosen in the configuration:

  [enforce]
  mode = "off"            # off | soft | hard
  mem_overcommit = 1.5    # soft mode: the hard ceiling is claim x this
  use_systemd = true      # allow qex to ask systemd for a scope per job

  off    no limit; the claim is a promise (the default, and the only mode
         on macOS)
  soft   the kernel throttles and reclaims once the job passes its claim
         (memory.high = claim) and kills it at claim x mem_overcommit
         (memory.max)
  hard   the kernel kills the job when it passes its claim
         (memory.max = claim, and memory.swap.max = 0 so that the job
         cannot dodge the limit by paging out)

Check what is really in force with

  qex config show

It prints ACTIVE, or NOT ACTIVE with the exact reason and what would fix it.
qex never reports a limit that it did not apply. Each job's record repeats
the answer for that job in the `enforcement` field (`qex status ID --json`).

One cgroup per job
------------------

To limit a job, and to know for sure when the kernel killed THAT job, the job
needs a cgroup of its own. qex gets one from systemd:

  1. For every attempt, the job's supervisor is put into a transient scope
     of your systemd USER manager, `qex-<first 8 of the id>-<attempt>.scope`
     in `qex.slice`, with delegation switched on. qex uses pystemd over
     D-Bus when installed (`qex[systemd]`), otherwise
     `systemd-run --user --scope`; `QEX_SCOPE_BACKEND` forces one. The job
     does not start before the supervisor is inside the scope.
  2. Inside that scope the supervisor creates two child cgroups, one for
     itself and one for the job's attempt (cgroup v2 allows no processes in
     a group that hands controllers down), turns on the memory controller
     (and pids and cpu where delegated), and the job joins its child before
     it runs a single instruction of the command.
  3. The limit is written on the job's child: memory.max, plus memory.high
     in soft mode and memory.swap.max in hard mode. memory.oom.group is
     set, so an out-of-memory kill takes the job's whole process tree
     instead of one random child.
  4. The evidence comes from the job's child alone: `oom_kill` in
     memory.events proves an OOM kill of this job, memory.peak gives the
     true peak, and memory.pressure the job's own pressure.

Because the supervisor sits in its own scope, restarting or killing the
coordinator does not touch running jobs.

A proven OOM kill, and the retry
--------------------------------

When the job's own counter shows an OOM kill, the state is `oom` and the exit
code 99. The kill proves one thing: the claim was too small. So qex

  - multiplies the memory claim by `[retry] growth` (default 2.0),
  - never beyond `[budget] mem` (a job already at the budget stays `oom`,
    and the record says a bigger machine or budget is needed),
  - sends the job back through the QUEUE, since the larger claim has not
    been admitted yet,
  - and runs it again under the SAME id, with `--- attempt N ---` in both
    logs, up to `[retry] on_oom` times (default 2).

These raises do not use up `--retries`. The learner keeps the killed size as
a LOWER bound, so the next run of the same command starts above it. Set
`on_oom = 0` to report the kill without retrying.

When enforcement is NOT ACTIVE
------------------------------

Any missing piece makes qex fall back to plain process groups: not Linux,
cgroup v1 or a hybrid hierarchy, no systemd user manager or user bus, the
memory controller not delegated to your user, `use_systemd = false`, or no
way to create the scope. The job then runs with NO limit, qex warns once,
and `qex config show` says NOT ACTIVE with the reason.

Without a cgroup of its own, the only OOM counter qex can read is your login
session's, which also counts kills of your OTHER programs. qex reports `oom`
only when that evidence points at this job (`oom_evidence` = "session" in the
record), and it never retries or raises the claim on such evidence, because
the claim may well have been right while the machine was full. A plain KILL
that qex cannot explain is reported as `killed`.

What a machine needs
--------------------

  - Linux with the unified cgroup v2 hierarchy (`stat -fc %T /sys/fs/cgroup`
    prints `cgroup2fs`);
  - a systemd user manager (`systemctl --user status` answers);
  - the memory controller delegated to your user, i.e. `memory` appears in
    /sys/fs/cgroup/user.slice/user-$UID.slice/user@$UID.service/
    cgroup.controllers (recent systemd delegates memory and pids by default;
    older ones need a drop-in with Delegate= for user@.service);
  - pystemd (`pip install 'qex-queue[systemd]'`, with the user D-Bus, e.g.
    dbus-user-session on Debian) or the systemd-run program;
  - `loginctl enable-linger $USER` if jobs must outlive your last login
    session, because the user manager, and every scope under it, stops
    when that session ends.

The stop hook never runs inside a job's cgroup and gets no limit.

More
----

docs/enforcement.md    the design, the checks, and how to diagnose them
docs/systemd.md        the user units: socket activation and scopes
`qex help config`      every [enforce] and [retry] key
`qex help states`      what `oom` and `killed` mean
"""
