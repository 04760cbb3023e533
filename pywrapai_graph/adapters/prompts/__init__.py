"""Prompt sources: the filesystem registry of versioned system prompts."""
