"""budgetlab: a workshop on budgets, endings and isolation for Celery batches."""

__version__ = "0.1.0"
