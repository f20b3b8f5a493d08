"""Lab 5: a scan sampler whose deltas say a busy table was never scanned."""
