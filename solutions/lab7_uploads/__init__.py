"""Lab 7: Kontor's bulk uploads and the workers' start-up check."""
