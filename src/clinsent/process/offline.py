"""Offline by construction: the switches that keep Hugging Face, transformers and MedCAT off the
network, set before any of them is imported.

Importing :mod:`clinsent` sets them in this process when they are unset, so every job script
(each imports the package before transformers or sentence-transformers) and every library use
is offline unless the user's environment says otherwise. The Snakefile goes further with
:func:`set_network_switches`: every job is offline whatever the environment. The two downloads
a config may ask for are local rules that run on the submitting host: ``download_model`` turns
the hub switches on for its own process only (:mod:`clinsent.models.download`), and the ontology
release is fetched with urllib, which these switches do not govern. Saved models' cards are written from local
information only (:func:`clinsent.models.base.sentence_transformer`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, MutableMapping

# switch -> its offline value
OFFLINE = {
    "HF_HUB_OFFLINE": "1",  # huggingface_hub: no download, no model_info, no telemetry
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "MEDCAT_DISABLE_VERSION_CHECK": "true",  # MedCAT asks PyPI for its latest version when a pack loads
}
ONLINE = {"HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0"}


def default_offline(env: MutableMapping[str, str] = os.environ) -> None:
    """Set every switch that is unset to its offline value."""
    for key, value in OFFLINE.items():
        env.setdefault(key, value)


def set_network_switches(hub_models: Iterable[str], env: MutableMapping[str, str] = os.environ) -> None:
    """Offline, whatever ``env`` says, unless ``hub_models`` (the Hugging Face ids the config
    names) is non-empty: then the hub switches are left as the user set them, or on."""
    hub = list(hub_models)
    for key, value in OFFLINE.items():
        if hub and key in ONLINE:
            env.setdefault(key, ONLINE[key])
        else:
            env[key] = value
