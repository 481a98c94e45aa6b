"""`system=http`: a memory daemon (memoryd's wire format) behind the System seam."""
