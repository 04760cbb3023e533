"""The composition root: turns names, paths and config into wired objects."""
