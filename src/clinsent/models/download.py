"""Fetch a model named by a Hugging Face id into a local folder: the one network access of a run
besides the ontology release, made by the local rule ``download_model`` on the host that runs
Snakemake. Jobs then load the folder offline (:func:`clinsent.models.base.resolve_model`).

This turns the hub switches on for its own process only (:mod:`clinsent.process.offline` keeps every
other job offline), downloads a complete snapshot with ``huggingface_hub.snapshot_download`` into
a hidden folder beside the target, and moves it into place only when whole, so an interrupted
download leaves nothing that looks complete. Downloads of one model serialise on its lock
(:func:`clinsent.safety.exclusive.building_lock`: ``fcntl.flock`` on ``.<folder>.lock`` beside it,
the lock its writer then holds), so two checkouts sharing ``hub_dir`` never delete each other's
partial download: the second waits, finds the model there and is done. A failure
is one line (the cause's type, not its traceback). The download itself is not exercised offline
(tests have no network)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clinsent.errors import InputError
from clinsent.io.files import atomic_folder
from clinsent.process.offline import ONLINE
from clinsent.safety.exclusive import building_lock


def download_hub_model(repo_id: str, out_dir: str | Path, log: Callable[[str], Any] = print) -> Path:
    from clinsent.safety.places import inside

    out = inside(out_dir, Path(out_dir).parent)  # the folder replaced is the model's own, under hub_dir
    out.parent.mkdir(parents=True, exist_ok=True)
    with building_lock(out):  # another checkout's download of this model finishes first
        if (out / "config.json").is_file() or (out / "modules.json").is_file():
            log(f"{repo_id} is already in {out} (downloaded by another run)")
            return out
        return _download(repo_id, out, log)


def _download(repo_id: str, out: Path, log: Callable[[str], Any]) -> Path:
    if "huggingface_hub" in sys.modules:  # it reads the switches once, when imported
        raise RuntimeError("huggingface_hub was imported before the download turned the network on")
    os.environ.update(ONLINE)
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    with atomic_folder(out) as partial:  # a complete snapshot, put in place only when whole
        try:
            snapshot_download(repo_id=repo_id, local_dir=str(partial))
        except RepositoryNotFoundError:
            raise InputError(
                "config: base_models",
                f"{repo_id!r} is not a model on the Hugging Face hub (or needs a token)",
                "check the id, log in with `huggingface-cli login`, or give a local folder",
            ) from None
        except (HfHubHTTPError, OSError) as exc:
            raise InputError(
                out,
                f"downloading {repo_id!r} failed ({type(exc).__name__})",
                "run Snakemake on a host with "
                "network access (download_model is a local rule), or download the model elsewhere and give "
                "its folder in the config",
            ) from None
    log(f"downloaded {repo_id} into {out} ({sum(1 for p in out.rglob('*') if p.is_file())} files)")
    return out
