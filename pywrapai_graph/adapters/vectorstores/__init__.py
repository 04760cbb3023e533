"""vectorstores adapters."""
