"""memeval: evaluation and benchmarking harness for AI coding agents' long-term memory."""

__version__ = "0.1.0"
