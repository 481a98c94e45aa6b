"""Plugins import `memeval.data.entry`: keep it working; the entry type lives in memeval.entry."""

from memeval.entry import LABEL_ALIASES, LABELS, Entry, normalise_label

__all__ = ["LABELS", "LABEL_ALIASES", "Entry", "normalise_label"]
