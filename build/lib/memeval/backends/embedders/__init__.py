"""Embedders: sentence-transformers (default), hashing (fast tests), OpenAI-compatible HTTP."""
