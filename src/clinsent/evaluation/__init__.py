"""STS evaluation sets and metrics."""
