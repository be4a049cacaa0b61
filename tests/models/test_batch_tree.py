"""One walk of a prepared batch (clinsent.models.batch_tree): leaves in a fixed order with their paths
(dict keys sorted, lists and tuples by position, a packing's fields), tensors mapped with every
container and record made anew, and every dict visited before its children (a packing attached
to it is walked too)."""

from __future__ import annotations

from typing import Any

import torch

from clinsent.models.batch_tree import dicts, is_record, leaves, mapped, zipped
from clinsent.models.unpadded import PACKING, Packing, attach, packing


def _batch() -> dict[str, Any]:
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    return {
        "n": 2,
        "doubled": {"input_ids": torch.arange(6).view(2, 3), "attention_mask": mask},
        "rows": [torch.zeros(2), (3, None)],
    }


def test_leaves_come_in_a_fixed_order_with_their_paths() -> None:
    batch = _batch()
    reordered = {"rows": batch["rows"], "n": 2, "doubled": dict(reversed(list(batch["doubled"].items())))}
    paths = [path for path, _ in leaves(batch)]
    assert paths == [".doubled.attention_mask", ".doubled.input_ids", ".n", ".rows[0]", ".rows[1][0]", ".rows[1][1]"]
    assert [p for p, _ in leaves(reordered)] == paths  # a dict's insertion order does not matter
    attach(batch)
    assert is_record(batch["doubled"][PACKING]) and not is_record(batch["doubled"])
    got = dict(leaves(batch))
    assert set(got) - set(paths) == {
        f".doubled.packing.{f}"
        for f in ("cu_lengths", "index", "max_length", "room", "shape[0]", "shape[1]", "target")
    }
    assert got[".doubled.packing.max_length"] == 2 and got[".rows[1][1]"] is None


def test_mapped_makes_every_container_and_record_anew() -> None:
    batch = attach(_batch(), static=True)
    doubled = mapped(batch, lambda t: t + 100)
    assert doubled["n"] == 2 and isinstance(doubled["rows"][1], tuple) and doubled["rows"][1] == (3, None)
    assert doubled["doubled"] is not batch["doubled"]
    pack = doubled["doubled"][PACKING]
    assert isinstance(pack, Packing) and pack is not batch["doubled"][PACKING]
    assert (
        torch.equal(pack.index, batch["doubled"][PACKING].index + 100) and pack.room == batch["doubled"][PACKING].room
    )
    assert torch.equal(doubled["doubled"]["input_ids"], torch.arange(6).view(2, 3) + 100)


def test_every_dict_is_visited_before_its_children() -> None:
    batch = _batch()
    seen = []
    for found in dicts(batch):
        seen.append(sorted(found))
        if "attention_mask" in found:
            found[PACKING] = packing(found["attention_mask"])
    assert seen == [["doubled", "n", "rows"], ["attention_mask", "input_ids"]]
    assert isinstance(batch["doubled"][PACKING], Packing)


def test_zipped_visits_every_tensor_beside_its_counterpart() -> None:
    static, batch = attach(_batch(), static=True), attach(_batch(), static=True)
    batch["doubled"]["input_ids"] = batch["doubled"]["input_ids"] + 7
    seen: list[tuple[torch.Tensor, torch.Tensor]] = []
    zipped(static, batch, lambda to, value: seen.append((to, value)))
    tensors = [leaf for _, leaf in leaves(static) if isinstance(leaf, torch.Tensor)]
    assert len(seen) == len(tensors) == 6  # the ids, the mask, a row of zeros, the packing's three tensors
    assert any(to is static["doubled"]["input_ids"] and value is batch["doubled"]["input_ids"] for to, value in seen)
