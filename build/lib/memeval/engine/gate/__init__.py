"""The write-path noise gate: cheap stages in front of the judge, then the write pipeline."""
