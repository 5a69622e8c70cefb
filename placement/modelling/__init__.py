"""modelling."""
