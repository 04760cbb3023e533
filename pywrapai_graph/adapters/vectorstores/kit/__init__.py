"""The shared kit of the store engines: what two or more of them use."""
