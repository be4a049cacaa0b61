"""Build each peer's bench-only environment from PyPI (``make bench-peers``): a virtual
environment per folder of ``bench/peers/`` that holds a ``requirements.txt``, in
``bench/peers/.envs/<peer>`` (ignored by git), never touching the project's lock or ``.venv``.
An environment whose requirements have not changed since it was built is kept.

    python bench/peers/build.py [PEER ...] [--envs DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent


def peers() -> list[str]:
    return sorted(p.parent.name for p in HERE.glob("*/requirements.txt"))


def python_of(envs: Path, peer: str) -> Path:
    return envs / peer / "bin" / "python"


def build(peer: str, envs: Path) -> Path:
    """The peer's environment, built (or kept, when its requirements are those it was built from)."""
    wanted = (HERE / peer / "requirements.txt").read_bytes()
    stamp = envs / peer / ".requirements.sha256"
    digest = hashlib.sha256(wanted).hexdigest()
    if stamp.exists() and stamp.read_text() == digest and python_of(envs, peer).exists():
        print(f"{peer}: kept ({envs / peer})")
        return python_of(envs, peer)
    print(f"{peer}: building {envs / peer} from PyPI ...", flush=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(envs / peer)
    pip = [str(python_of(envs, peer)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "-r", str(HERE / peer / "requirements.txt")], check=True)
    stamp.write_text(digest)
    return python_of(envs, peer)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("peers", nargs="*", default=None, help=f"default: all ({', '.join(peers())})")
    ap.add_argument("--envs", type=Path, default=HERE / ".envs")
    args = ap.parse_args(argv)
    for peer in args.peers or peers():
        if peer not in peers():
            raise SystemExit(f"bench/peers: no peer {peer!r} (one of {peers()})")
        build(peer, args.envs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
