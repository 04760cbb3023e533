"""Response caches."""
