"""Contrastive objectives."""
