"""Use cases and pure orchestration logic; no SDK, no database driver."""
