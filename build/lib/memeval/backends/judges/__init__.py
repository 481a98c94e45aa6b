"""Judges: the expensive value gate the cheap stages try to predict."""
