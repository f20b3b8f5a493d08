"""A tally task that should add up every number it gets."""

from kontor.celery_app import app


@app.task(name="sample.tally")
def tally(numbers: list[int]) -> int:
    # Every number counts, negative ones included.
    return sum(numbers)
