"""One story per lab: the workload, budgets, poisoned rows and readings that `budgetlab run N` and lab N's checks share."""
