"""The console entry point: a Ctrl-C while the CLI is still importing exits quietly with 130.

`python -m budgetlab.cli_entry` runs the CLI too, for scripts that must use this very interpreter.
"""

import signal
import sys


def _quiet_exit(_signum, _frame):
    sys.stderr.write("interrupted\n")
    sys.exit(130)


def run() -> None:
    signal.signal(signal.SIGINT, _quiet_exit)
    try:
        from budgetlab.cli import main
    except ModuleNotFoundError as exc:
        # The package alone is the audit; the workshop's commands need its extra.
        sys.stderr.write(f"error: the workshop needs its extra ({exc.name} is missing): "
                         "pip install 'budgetlab[workshop]', or use budgetlab-audit for the audit alone\n")
        sys.exit(2)

    # From here on Ctrl-C raises KeyboardInterrupt, so every command's clean-up runs.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main()


if __name__ == "__main__":
    run()
