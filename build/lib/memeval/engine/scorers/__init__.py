"""Content scorers: predict the judge's verdict from an embedding, before paying for the judge."""
