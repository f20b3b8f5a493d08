"""The numbers the pages state, read from the code that sets them: a tolerance, a share, a lab's clock speed.

A page (or the README) names a constant instead of typing its value:
`lab8.TOLERANCE` is a constant of budgetlab.stories.lab8, and a dotted
path such as `inworker.clock.DEFAULT_FACTOR` one of that budgetlab module.
A form after the name says how to write it:

- none: the value as it is (`0.005`);
- `percent`: a share as a percentage (`75 %`);
- `times`: a clock factor as how many times faster than production it runs (`200`, `5,000`);
- `per-ms`: a clock factor as the production seconds one wall millisecond becomes (`0.2`);
- `ms`: seconds as milliseconds (`5`);
- `xN`: the value times N, e.g. the wall seconds a 600 s limit takes at a factor (`x600`: `3`).
"""

from __future__ import annotations

import importlib
import re

from budgetlab.errors import BudgetlabError

# What names a number: the module's path with its trailing dot, the constant, and the form if any
# (`lab8.TOLERANCE`, `inworker.clock.DEFAULT_FACTOR times`); three groups, read by `reference`.
NAME = r"((?:\w+\.)+)(\w+)(?: ([\w.-]+))?"
# In a page: <!-- budgetlab-number lab8.TOLERANCE -->, <!-- budgetlab-number inworker.clock.DEFAULT_FACTOR times -->.
MARKER = re.compile(rf"<!-- budgetlab-number {NAME} -->")


def _plain(value: float) -> str:
    return f"{value:,.10g}" if value >= 1000 else f"{value:.10g}"


FORMS = {
    "": _plain,
    "percent": lambda value: f"{value * 100:g} %",
    "times": lambda factor: _plain(round(1 / factor, 6)),
    "per-ms": lambda factor: _plain(round(0.001 / factor, 6)),
    "ms": lambda seconds: _plain(round(seconds * 1000, 6)),
}


def value(path: str, name: str) -> float:
    """Return the constant `name` of the module `path` names (`lab8`: a story; `inworker.clock`: any module)."""
    module = f"budgetlab.{path}" if "." in path else f"budgetlab.stories.{path}"
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise BudgetlabError(f"no constant {name} in {module}, which a page names") from None


def render(path: str, name: str, form: str = "") -> str:
    """Return the constant as a page writes it in the given form."""
    if times := re.fullmatch(r"x(\d+(?:\.\d+)?)", form):
        return _plain(round(value(path, name) * float(times.group(1)), 6))
    if form not in FORMS:
        raise BudgetlabError(f"{path}.{name}: no form {form!r} (known: {', '.join(sorted(filter(None, FORMS)))})")
    return FORMS[form](value(path, name))


def reference(path: str, name: str, form: str | None) -> str:
    """Return the number that NAME's three groups name, as a page writes it."""
    return render(path.rstrip("."), name, form or "")


def fill(text: str) -> str:
    """Replace every marker in a page's text with its number."""
    return MARKER.sub(lambda match: reference(*match.groups()), text)
