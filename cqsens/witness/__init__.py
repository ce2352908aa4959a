"""Witnesses: lower bounds proven by two concrete databases evaluated in SQLite."""
