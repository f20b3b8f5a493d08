"""Every number a page or the README takes from the code (budgetlab.page_numbers) is the code's, and no clock speed is typed by hand."""

from __future__ import annotations

import re

import pytest
from docs_support import DOCS, ROOT

from budgetlab import page_numbers
from budgetlab.errors import BudgetlabError
from budgetlab.inworker import clock, labtime
from budgetlab.stories import lab7

# A speed written as a number: "200 times faster", "at 2,000x", "compressed 200 times", "200 times by default".
TYPED_SPEED = re.compile(r"\b\d[\d,]*(?:x\b| times (?:faster|by default))|compressed \d[\d,]* times")
# Sentences that state a speed as the condition of a past measurement or as a learner's own choice, not a lab's speed.
RECORDS = {
    ("docs/maintainers.md", "the default clock\n(200x)"),
    ("docs/maintainers.md", "3 to 5 % of one core at 200x"),
    ("docs/maintainers.md", "6 to 12 % at lab 7's 5,000x"),
    ("docs/instructors/lab7.md", "at 5,000x a busy machine's first run"),
    ("docs/instructors/lab7.md", "at 2,000x about 4,600"),
    ("docs/concepts/lab-clock.md", "such as `0.02` (50 times faster)"),
}


def test_each_form_writes_the_constant_it_names():
    assert page_numbers.render("inworker.clock", "DEFAULT_FACTOR") == f"{clock.DEFAULT_FACTOR:g}"
    assert page_numbers.render("inworker.clock", "DEFAULT_FACTOR", "times") == f"{1 / clock.DEFAULT_FACTOR:g}"
    assert page_numbers.render("lab7", "CLOCK", "times") == f"{1 / lab7.CLOCK:,.0f}"
    assert page_numbers.render("lab7", "CLOCK", "x3600") == f"{lab7.CLOCK * 3600:g}"
    assert page_numbers.render("lab7", "CLOCK", "per-ms") == f"{0.001 / lab7.CLOCK:g}"
    assert page_numbers.render("inworker.labtime", "SHORTEST_WAIT", "ms") == f"{labtime.SHORTEST_WAIT * 1000:g}"
    assert page_numbers.fill("allow <!-- budgetlab-number lab7.CLOCK times -->x") == f"allow {1 / lab7.CLOCK:,.0f}x"


@pytest.mark.parametrize("path, name, form", [("lab8", "NO_SUCH_NUMBER", ""), ("no_such_story", "CLOCK", ""),
                                              ("lab7", "CLOCK", "fortnights")])
def test_a_marker_that_names_nothing_is_a_one_line_error(path, name, form):
    with pytest.raises(BudgetlabError, match=r"no (constant|form)"):
        page_numbers.render(path, name, form)


@pytest.mark.parametrize("path", ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in DOCS.rglob("*.md"))])
def test_no_page_types_a_clock_speed(path):
    """A lab's clock speed on a page comes from the code that sets it, through a marker, never typed."""
    text = (ROOT / path).read_text(encoding="utf-8")
    text = re.sub(r"<!-- (budgetlab-)?number[^>]*-->[^<\n]*", "", text)
    for record in (record for page, record in RECORDS if page == path):
        assert record in text, f"{path} no longer says {record!r}: take it out of RECORDS"
        text = text.replace(record, "")
    typed = [match.group(0) for match in TYPED_SPEED.finditer(text)]
    assert not typed, f"{path} types a clock speed by hand ({', '.join(typed)}): use a budgetlab-number marker"
