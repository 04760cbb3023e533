"""Embedding adapters: provider APIs through their SDKs, plus offline local and hashing ones."""
