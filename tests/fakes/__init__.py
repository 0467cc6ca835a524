"""Fakes that stand in for the outside world in tests, over real sockets."""
