"""Project scripts: the gates the README's test command runs."""
