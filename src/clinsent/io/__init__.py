"""One way in, one way out: the reader layer, the guarded writer and its atomic file primitives,
the text-file policy and safe YAML."""
