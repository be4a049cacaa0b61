"""Data augmentations that replace SimCSE's dropout."""
