"""Sandboxes: stateful in-memory fakes of the cloud APIs lbhc talks to."""
