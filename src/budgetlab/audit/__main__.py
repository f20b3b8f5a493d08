"""Lets `python -m budgetlab.audit PATH...` run the audit."""

from budgetlab.audit import main

raise SystemExit(main())
