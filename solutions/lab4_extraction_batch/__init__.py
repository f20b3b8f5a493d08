"""Lab 4: Kontor's extraction batch: documents and transactions, their categories and prompts."""
