"""Datasets: labelled entries and the loaders that produce them."""
