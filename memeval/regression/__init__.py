"""The CI regression gate's work: gated runs, their checks against derived thresholds, and the
reports (`python -m memeval gate`)."""
