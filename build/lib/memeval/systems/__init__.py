"""Memory systems under test: the seam experiments use, and its adapters."""
