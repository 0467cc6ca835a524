"""lathe: a coding agent that reads, patches, runs and verifies real code."""

__version__ = "0.1.0"
