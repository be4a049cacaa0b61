"""``python -m clinsent COMMAND``: ``new-config`` (a user's config on top of a paper's,
:mod:`clinsent.commands.new_config`); ``plan`` (a config's jobs by rule, without Snakemake,
:mod:`clinsent.commands.plan`); ``embed`` (a corpus's vectors with a trained model,
:mod:`clinsent.commands.embed`, :mod:`clinsent.embedding.command`); ``warm -- COMMAND`` (COMMAND's jobs
forked from one interpreter that
has imported the heavy libraries, :mod:`clinsent.runner.warm`)."""

from __future__ import annotations

import sys

COMMANDS = {
    "new-config": "clinsent.commands.new_config",
    "plan": "clinsent.commands.plan",
    "warm": "clinsent.runner.warm",
    "embed": "clinsent.commands.embed",
    "search": "clinsent.commands.search",
}


def main(argv: list[str] | None = None) -> int:
    import importlib

    args = sys.argv[1:] if argv is None else argv
    usage = f"usage: python -m clinsent {{{','.join(COMMANDS)}}} ... (each command's --help says more)"
    if args[:1] in (["-h"], ["--help"]):
        print(usage)
        return 0
    if not args or args[0] not in COMMANDS:
        print(usage, file=sys.stderr)
        return 2
    return int(importlib.import_module(COMMANDS[args[0]]).main(args[1:]))


if __name__ == "__main__":
    raise SystemExit(main())
