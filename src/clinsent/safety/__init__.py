"""The rules every reader, writer and cache inherits (docs/concepts.md, "Writers, caches and
paths"; docs/sharing.md, "Privacy"):

- :mod:`clinsent.safety.reach`: whether anyone but a file's owner can reach and read it (privacy
  by who can reach a file, not by its own mode);
- :mod:`clinsent.safety.exclusive`: one writer per output (an exclusive lock held for the whole
  write; a second writer refused at once) and one builder per cache entry (the others wait and
  reuse it);
- :mod:`clinsent.safety.places`: the folders the tool may write under (never the root, a home
  folder itself or a system folder; a symlinked output refused);
- :mod:`clinsent.safety.content`: identity by content (a cache or a resumable working folder is
  keyed by a hash of the bytes it derives from, never by names, sizes or times).

The guarded writer (:mod:`clinsent.safety.guard`) applies them to every write.
"""
