"""The exception types whose message is shown to a person as a one-line error."""


class BudgetlabError(Exception):
    """A problem a person can act on; the CLI prints its message and exits 2."""

    exit_code = 2


class StackShortage(BudgetlabError):
    """The stack could not hand out what a check or run is owed: a Redis database, a scratch database, a service.

    Never the learner's doing: a check that meets one could not grade
    (budgetlab.harness.grading turns it into that verdict wherever it surfaces).
    """
