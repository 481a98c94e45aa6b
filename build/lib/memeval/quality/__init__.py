"""Memory quality: records, provenance lineage, the Memory Quality Score and attribution."""
