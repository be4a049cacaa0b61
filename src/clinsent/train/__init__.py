"""Training: one job per method x base model x seed."""
