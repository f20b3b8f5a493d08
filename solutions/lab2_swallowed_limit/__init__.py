"""Lab 2: three batch jobs whose per-item error handling also catches the soft time limit."""
