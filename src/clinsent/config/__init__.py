"""The config: settings declarations and their schema, parsing at the door, overlays, new-config,
the generated reference, names that become paths."""
