"""`python -m budgetlab.cli_entry` runs the CLI, for scripts that must use this very interpreter."""

from budgetlab.cli import main

if __name__ == "__main__":
    main()
