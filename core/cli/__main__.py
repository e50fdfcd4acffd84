"""``python -m core.cli``: the ``groundwatch`` command without the console script."""

from core.cli import main

if __name__ == "__main__":
    main()
