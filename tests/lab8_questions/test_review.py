"""Hidden checks of lab 8's month-end review: an item that keeps failing is recorded and the review goes on, once."""

from __future__ import annotations

from budgetlab.stories import lab8


def test_the_review_ends_once_with_every_item_answered_or_recorded(afternoon):
    """The review ends; each item is answered once or recorded failed after retries; nothing runs the review again."""
    problems = lab8.review_problems(afternoon)
    assert not problems, "the month-end review: " + "; ".join(problems[:3])
