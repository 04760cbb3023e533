"""Contract suites: one pytest base class per port, run against every adapter."""
