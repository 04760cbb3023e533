"""Adapters: the only code that talks to SDKs, databases and files. Loaded by composition."""
