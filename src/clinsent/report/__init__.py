"""Report: the tidy summary, the results table and the training-curve figure."""
