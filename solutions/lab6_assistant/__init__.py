"""Lab 6: Kontor's assistant: the model-calling tasks of its agent workers."""
