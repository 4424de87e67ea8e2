"""The Slurm engine (docs/slurm.md).

- `mapping`: pure. A claim as `sbatch` options, partitions from `sinfo`, `squeue` lines, and
  Slurm's words (pending reasons, end states) in qex's words.
- `commands`: the only place that runs Slurm's programs (sbatch, squeue, scancel, scontrol,
  sinfo).
- `engine`: the coordinator's side: submit, one `squeue` per interval for all jobs, kill,
  cancel, the records of jobs that Slurm ended without a supervisor's result.
- `node`: the batch script's program on the node: it starts qex's own supervisor inside the
  allocation (`python -m qex.engine.slurm.node <job-id>`).
- `sandbox`: the supervisor's evidence on a node: the Slurm job's cgroup v2 `memory.events`.
"""
