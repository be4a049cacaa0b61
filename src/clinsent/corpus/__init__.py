"""Corpus extraction: notes -> normalised text -> sentences."""
