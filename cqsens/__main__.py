"""``python -m cqsens``."""

from cqsens.cli.main import main

if __name__ == "__main__":
    main()
