"""The models memeval calls: embedders and LLM judges, in process or over HTTP. The I/O lives
here, so the write-gate engine above it stays pure computation over what they return."""
