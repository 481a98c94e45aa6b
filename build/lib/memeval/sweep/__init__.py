"""What a Hydra multirun ends with: its summary, as `python -m memeval sweep` prints it."""
