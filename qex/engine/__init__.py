"""Engines: where an admitted job runs.

The coordinator holds every job's record and answers every command; an engine decides where
and when the job's supervisor starts. Two exist:

- `local` (`qex.engine.local`): this machine. qex's own scheduler admits the job against
  the budget, the peers and the pools, and the coordinator starts the supervisor itself.
- `slurm` (`qex.engine.slurm`): a Slurm cluster. Slurm admits the job (placement, fair share,
  limits); a batch script starts qex's own supervisor inside the allocation, and the
  coordinator watches Slurm's queue with one `squeue` per interval for all its jobs.

`qex.engine.base.Engine` is the interface; `engine_for()` loads an engine lazily, so the
local hot path never imports Slurm code. A later engine (Kubernetes, Ray) is one more module
behind the same interface.
"""
