"""Lab 7: a bulk upload that runs past the broker's visibility timeout is delivered again while it still runs."""
