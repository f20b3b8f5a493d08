"""Tests of the static audit, budgetlab.audit, with its fixtures under fixtures/."""
