"""Infrastructure every layer may use: the on-disk cache, HTTP retries and the circuit breaker,
secret redaction and atomic file writes. Nothing here knows about memories or gates."""
