"""`system=memledger`: the memledger package, in process, behind the System seam."""
