"""cqsens: global sensitivity of SQL counting queries over multi-table databases."""
