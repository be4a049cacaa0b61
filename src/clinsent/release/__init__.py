"""Release copies of a run's trained models and their model cards."""
