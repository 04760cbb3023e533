"""Chat-model adapters, one module per provider, each through its official SDK."""
