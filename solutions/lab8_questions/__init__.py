"""Lab 8: Kontor's assistant questions and month-end review, which retry when the provider refuses."""
