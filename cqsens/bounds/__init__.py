"""The sensitivity bounds, one module per bound."""
