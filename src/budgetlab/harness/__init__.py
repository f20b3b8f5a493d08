"""The machinery behind run and check: the rig, real workers, scratch databases, the grading plugin and the model service."""
