"""One story per lab: the workload, budgets and readings that its run and its graders share."""
