"""exact."""
