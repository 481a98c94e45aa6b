"""State the gate keeps: the rejection (and acceptance) ring buffers and the memory store."""
