"""prompts adapters."""
