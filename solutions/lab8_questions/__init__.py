"""Lab 8: model-calling tasks that retry on the provider's 429s and 503s, and the promise each retry forgets."""
