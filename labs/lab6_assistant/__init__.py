"""Lab 6: model-calling tasks on the threads pool, where no time limit applies and the model client's own defaults decide."""
