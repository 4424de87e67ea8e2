"""The supervisor: the process that runs one job, keeps its record, outlives the coordinator."""
