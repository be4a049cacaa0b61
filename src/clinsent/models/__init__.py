"""Encoders, poolings and the entity encoder."""
