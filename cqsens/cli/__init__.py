"""The command line: one module per command; only this package prints or exits."""

from cqsens.cli.main import cli, main

__all__ = ["cli", "main"]
