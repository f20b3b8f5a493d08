"""Lab 2: three batch jobs that never reach a final state when they run out of time."""
