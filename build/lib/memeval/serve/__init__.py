"""`python -m memeval serve`: memeval's reference engine as a memoryd daemon, its embedder as an
OpenAI-compatible embeddings server; both on loopback only."""
