"""Executors: where shell commands run (the local machine, a bubblewrap sandbox)."""
