"""Noiseless privacy of counting queries under partial knowledge (``cqsens noiseless``)."""
