"""Privacy by reachability: whether anyone but a file's owner can reach it and read it.

A file's own mode says little: ``texts.csv`` at 0644 inside a 0700 folder is private, and so
must its vectors be. The kernel lets a user open a file when the user may search (``x``) every
folder on the way and read (``r``) the file. Each of those checks takes, in this order
(POSIX.1e, ACLs included): the owner's bits for the owner; a named-user ACL entry for that
user; for a member of the owning group or of a named group, those entries under the ACL's
mask; the other bits for anyone else. Root is not counted (it reads everything).

The users of a machine and their groups cannot all be known here (a cluster's directory, LDAP),
so every kind of user the path's modes and ACLs tell apart is tried: each owner and named user
seen on the way and "anyone else", each in every combination of the groups seen on the way. The
path is reachable when one of them gets through. A component whose ACL cannot be read counts
by its mode alone.

Used by the guarded writer (:func:`clinsent.safety.guard.private_destination`) and the embed
command: an input nobody else can reach is private, and its vectors go only where nobody else
can reach them.
"""

from __future__ import annotations

import itertools
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

R, W, X = 4, 2, 1
ANYONE = -1  # a user who is neither an owner nor a named user of any component
ACL_XATTR = "system.posix_acl_access"
# POSIX.1e ACL entry tags as Linux stores them in the xattr (linux/posix_acl_xattr.h)
USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
MAX_GROUPS = 10  # distinct groups tried in every combination; more: the first ten (2**10 combinations)


@dataclass(frozen=True)
class Access:
    """Who may do what with one path component (its mode, and its access ACL if it has one)."""

    uid: int
    gid: int
    owner: int  # rwx bits
    group: int  # the owning group's entry (with an ACL: its GROUP_OBJ, not the mode's group bits)
    other: int
    users: dict[int, int] = field(default_factory=dict)  # named-user ACL entries
    groups: dict[int, int] = field(default_factory=dict)  # named-group ACL entries
    mask: int = 7

    def bits(self, uid: int, gids: frozenset[int]) -> int:
        """The rwx bits a user ``uid`` in groups ``gids`` gets on this component."""
        if uid == self.uid:
            return self.owner
        if uid in self.users:
            return self.users[uid] & self.mask
        matched = ([self.group] if self.gid in gids else []) + [p for g, p in self.groups.items() if g in gids]
        if matched:
            out = 0
            for perm in matched:
                out |= perm & self.mask
            return out
        return self.other


def parse_acl(raw: bytes) -> dict[int, list[tuple[int, int]]]:
    """An access ACL xattr as {tag: [(id, perm)]} (version 2: a 4-byte header, then 8-byte
    entries of tag, perm and id, little-endian)."""
    out: dict[int, list[tuple[int, int]]] = {}
    for offset in range(4, len(raw) - 7, 8):
        tag, perm, ident = struct.unpack_from("<HHI", raw, offset)
        out.setdefault(tag, []).append((ident, perm & 7))
    return out


def access(path: Path) -> Access:
    """The access rules of one existing path component (links are not followed here)."""
    st = os.lstat(path)
    mode = st.st_mode
    plain = Access(st.st_uid, st.st_gid, (mode >> 6) & 7, (mode >> 3) & 7, mode & 7)
    try:
        raw = os.getxattr(path, ACL_XATTR, follow_symlinks=False)
    except (OSError, AttributeError):  # no ACL, or a file system without them
        return plain
    acl = parse_acl(raw)
    if not acl:
        return plain
    first = {tag: entries[0][1] for tag, entries in acl.items() if tag in (USER_OBJ, GROUP_OBJ, OTHER, MASK)}
    return Access(
        st.st_uid,
        st.st_gid,
        first.get(USER_OBJ, plain.owner),
        first.get(GROUP_OBJ, plain.group),
        first.get(OTHER, plain.other),
        {i: p for i, p in acl.get(USER, [])},
        {i: p for i, p in acl.get(GROUP, [])},
        first.get(MASK, 7),
    )


def _chain(path: Path) -> list[Access]:
    """The access rules from the root down to ``path`` (resolved: the file a reader would get)."""
    target = Path(path).resolve()
    return [access(p) for p in (*reversed(target.parents), target)]


def _someone_gets(chain: list[Access], last: int, owner: int) -> bool:
    """Whether a user other than ``owner`` (and root) may search every folder of ``chain`` but
    the last and has one of the ``last`` bits on the last."""
    uids = ({a.uid for a in chain} | {u for a in chain for u in a.users} | {ANYONE}) - {owner, 0}
    gids = sorted({a.gid for a in chain} | {g for a in chain for g in a.groups})[:MAX_GROUPS]
    for uid in uids:
        for size in range(len(gids) + 1):
            for combo in itertools.combinations(gids, size):
                groups = frozenset(combo)
                if all(a.bits(uid, groups) & X for a in chain[:-1]) and chain[-1].bits(uid, groups) & last:
                    return True
    return False


def others_can_read(path: str | Path) -> bool:
    """Whether anyone but the file's owner can reach ``path`` and read it (see the module)."""
    chain = _chain(Path(path))
    return _someone_gets(chain, R, chain[-1].uid)


def others_can_reach(folder: str | Path, owner: int | None = None) -> bool:
    """Whether anyone but ``owner`` (this process's user by default) can reach ``folder`` and
    list or enter it: a file put in it would be within their reach (its own mode aside)."""
    return _someone_gets(_chain(Path(folder)), R | X, os.geteuid() if owner is None else owner)
