"""What the CLI's commands do, one module each (check, watch, doctor, report, reset, make test); cli.py only parses."""
