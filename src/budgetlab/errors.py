"""The one exception type whose message is shown to a person as a one-line error."""


class BudgetlabError(Exception):
    """A problem a person can act on; the CLI prints its message and exits 2."""

    exit_code = 2
