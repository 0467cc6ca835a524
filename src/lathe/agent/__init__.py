"""The agent loop: a state machine that knows nothing about terminals."""
