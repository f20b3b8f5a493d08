"""Lab 1: Kontor's worker container, its Celery settings and its tasks."""
