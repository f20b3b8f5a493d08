"""Lab 5: a scan sampler whose deltas come back frozen inside a transaction."""
