"""Checkpoint formats and the loader: every layout jaxeval reads, mapped onto the models' parameter table."""
