"""Code that runs inside the workers and lab processes budgetlab starts: the lab clock and the pool that applies it."""
