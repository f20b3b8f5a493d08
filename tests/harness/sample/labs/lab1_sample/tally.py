"""A tally task that should add up every number it gets."""

from kontor.celery_app import app


@app.task(name="sample.tally")
def tally(numbers: list[int]) -> int:
    # TODO: negative numbers count too.
    return sum(n for n in numbers if n > 0)
