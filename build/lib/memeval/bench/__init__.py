"""What memeval's own runs cost: the passes against one embedding pass, scale, the Phoenix push,
the cache warm-up and every job against its budget (`python -m memeval bench`)."""
