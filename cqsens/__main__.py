"""``python -m cqsens``."""

from cqsens.cli import main

if __name__ == "__main__":
    main()
