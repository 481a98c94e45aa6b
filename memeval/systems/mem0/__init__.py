"""`system=mem0`: the mem0ai package, in process, behind the System seam."""
