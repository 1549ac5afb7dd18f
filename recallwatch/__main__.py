"""``python -m recallwatch``: the ``recallwatch`` command, for environments without its script
on the PATH."""

from recallwatch.cli import main

if __name__ == "__main__":
    main()
