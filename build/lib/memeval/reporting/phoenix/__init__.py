"""Arize Phoenix: a local server on loopback, and a run's decisions as traces pushed to it."""
