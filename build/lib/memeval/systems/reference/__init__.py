"""`system=reference`: memeval's own engine behind the System seam, with the stored-memory models
only it offers."""
