"""Examples."""
