"""embedders adapters."""
