"""Embedding on CPU-only servers with Intel's OpenVINO runtime, reading the ONNX export.

``backend: openvino`` (``--backend openvino``) runs the same graph as ``backend: onnx`` (the
whole saved pipeline, exported once by :func:`clinsent.embedding.onnx_backend.export` and cached
by the model's content), compiled by OpenVINO for the CPU with the run's thread count, instead of
ONNX Runtime. ``quantize: none`` asks OpenVINO for f32 inference (its ``INFERENCE_PRECISION_HINT``,
which otherwise defaults to bf16 on CPUs with bf16 instructions); ``quantize: bf16`` asks for bf16
where the CPU has it (AVX512-BF16, AMX), f32 elsewhere, and the output's metadata says which ran.
``quantize: int8`` is static post-training quantization with NNCF (OpenVINO's own, the recipe
``optimum-intel`` applies for sentence-transformers' int8 OpenVINO export): the MatMul weights
and activations in int8, their ranges calibrated on a sample of the corpus being embedded (the
first chunk of the whole input, the same for every shard), preset ``MIXED`` (symmetric weights,
asymmetric activations) with the transformer model type (NNCF's rules for attention and
normalisation, which it leaves in f32), run at f32 elsewhere. The quantized graph is cached beside
the export under a key of the model's bytes and of the sample's texts (:func:`calibrated_key`),
owner-only like the cache (its ranges derive from the texts).

Why this backend: on 2 cores of an AMD EPYC with AVX512-BF16, embedding 100,000 sentences with
the packaged MiniLM, OpenVINO ran our fp32 graph at 1.1 times ONNX Runtime's rate (f32), 1.8 times
(bf16, its vectors 2e-5 mean cosine distance from f32's) and 2.6 times (int8, below), the fastest
CPU path measured, sentence-transformers' and fastembed's included (``bench/results/embed.md``).
sentence-transformers' own ``backend="openvino"`` goes through ``optimum-intel``'s exporter, which is not among this
project's pinned packages (its exporter needs ``transformers<4.58``); OpenVINO's runtime alone
(``openvino``, needing only ``numpy`` and ``openvino-telemetry``) reads an ONNX file directly, so the
export stays ours and the runtime installs beside the lock. Why not OpenVINO on the int8 graph:
it ran ONNX Runtime's dynamically quantized graph slower than f32 (363 against 959 sentences/s),
so OpenVINO's int8 is its own quantization of the f32 graph. Measured on the same machine: NNCF's
int8 ran at 2.3 times OpenVINO's f32 rate and moved the packaged MiniLM's Spearman on the demo
BIOSSES pairs by −0.004 (−0.0004 calibrated on other texts of the same corpus), where ONNX
Runtime's dynamic int8 moved it by −0.006 and sentence-transformers' static OpenVINO export
(preset PERFORMANCE, 300 texts of an English sentiment set padded to 384 tokens) by −0.017; a
model the demo trained, by +0.003 on the demo clinical STS pairs. The preset PERFORMANCE (−0.008)
and the mixed preset with bf16 for the other ops (−0.007) cost the MiniLM more, so int8 runs
MIXED, with f32 beside it.

NNCF would send usage telemetry without asking; :func:`_nncf` turns it off (its ``NNCF_CI``) before
NNCF is imported, so nothing leaves the machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from clinsent.embedding.int8_bound import BoundSpec
from clinsent.embedding.onnx_backend import ExportedEncoder

PRECISIONS = {"none": "f32", "bf16": "bf16", "int8": "f32"}  # quantize -> OpenVINO's precision hint (int8: beside)
CALIBRATION = 300  # texts of the input's first chunk that calibrate int8's ranges


def precision(quantize: str) -> str:
    """The precision OpenVINO runs for ``quantize`` on this machine's CPU: f32 for ``none``; for
    ``bf16``, bf16 where the CPU plugin's own default is bf16 (it has bf16 instructions), else f32."""
    import openvino as ov

    if quantize == "int8":
        return "int8"
    if PRECISIONS[quantize] == "f32":
        return "f32"
    return "bf16" if ov.Core().get_property("CPU", "INFERENCE_PRECISION_HINT").to_string() == "bf16" else "f32"


class OpenVinoEncoder(ExportedEncoder):
    """The exported graph (:class:`clinsent.embedding.onnx_backend.OnnxEncoder`'s f32 export) run
    by OpenVINO on the CPU."""

    def __init__(
        self,
        model_dir: Path,
        quantize: str,
        cache: Path,
        calibration: list[str] | None = None,
        bound: BoundSpec | None = None,
        **run: Any,
    ) -> None:
        """``quantize``: ``none`` (f32), ``bf16`` or ``int8`` (``calibration``: the texts its ranges
        are calibrated on; ``bound``: the quality it is held to, :mod:`clinsent.embedding.int8_bound`;
        how it was made is :attr:`made`); ``run``: :class:`ExportedEncoder`'s ``threads``, ``log`` and
        ``model_key``."""
        import openvino as ov

        from clinsent.embedding.onnx_backend import export

        super().__init__(model_dir, cache, **run)
        threads, log = self.threads, self.log
        self.made: dict[str, Any] | None = None
        graph = export(model_dir, "none", cache, self.key, log)
        core = ov.Core()
        if quantize == "int8":
            if not calibration or bound is None:
                raise ValueError("int8 with OpenVINO needs calibration texts and a bound")
            model = core.read_model(str(self._quantized(graph, calibration, bound, core, log)))
        else:
            model = core.read_model(str(graph))
        properties: dict[str, Any] = {"INFERENCE_PRECISION_HINT": PRECISIONS[quantize]}  # OpenVINO's, not ours
        if threads:
            properties["INFERENCE_NUM_THREADS"] = threads
        self.compiled = core.compile_model(model, "CPU", properties)
        self.request = self.compiled.create_infer_request()
        self.names = [port.get_any_name() for port in self.compiled.inputs]
        self.output = self.compiled.outputs[0]

    def _quantized(self, graph: Path, calibration: list[str], spec: BoundSpec, core: Any, log: Any) -> Path:
        """The int8 graph calibrated on ``calibration`` and made within ``spec``'s bound
        (:func:`clinsent.embedding.int8_bound.quantize_within`): made once per model, sample and
        bound (builders of one entry take turns, as the export's), in the export's cache entry,
        with how it was made (``made.json``: the bound, the products kept in f32, the drop)."""
        import json

        from clinsent.embedding.int8_bound import quantize_within
        from clinsent.io.files import atomic_folder
        from clinsent.safety.exclusive import building_lock
        from clinsent.safety.guard import claim

        folder = claim(graph.parent / int8_entry(calibration, spec))
        target = folder / "model.xml"
        if not target.exists():
            waiting = lambda who: log(f"waiting for {who}, which is quantizing this model")  # noqa: E731
            with building_lock(graph.parent, waiting=waiting):
                if not target.exists():
                    log(f"quantizing the model to int8 with NNCF on {len(calibration)} of the input's texts (once)")
                    import openvino as ov

                    f32 = core.read_model(str(graph))
                    names = [port.get_any_name() for port in f32.inputs]
                    calibrated = [self.feeds(calibration[i : i + 8], names) for i in range(0, len(calibration), 8)]

                    def compile_model(model: Any) -> Any:
                        hint = {
                            "INFERENCE_PRECISION_HINT": "f32",
                            **({"INFERENCE_NUM_THREADS": self.threads} if self.threads else {}),
                        }
                        return core.compile_model(model, "CPU", hint)

                    def vectors(compiled: Any, texts: list[str]) -> np.ndarray:
                        out = compiled.outputs[0]
                        batches = [self.feeds(texts[i : i + 32], names) for i in range(0, len(texts), 32)]
                        return np.concatenate([np.asarray(compiled(b)[out], dtype=np.float32) for b in batches])

                    bound = spec.bound(lambda t: vectors(compile_model(f32), t))
                    quantized, made = quantize_within(
                        f32,
                        bound,
                        lambda model, kept: _nncf_quantize(model.clone(), calibrated, kept),
                        lambda compiled: vectors(compiled, bound.texts),
                        compile_model,
                        log,
                    )
                    log(
                        f"int8 within the bound: {bound.what} {made.drop:.4f} below f32 (at most {bound.max_drop}); "
                        f"{len(made.kept_f32)} of its {made.products} matrix products kept in f32 "
                        f"({made.quantizations} quantization(s), {made.seconds:.0f} s)"
                    )
                    with atomic_folder(folder) as staged:
                        staged.mkdir(mode=0o700)
                        ov.save_model(quantized, str(staged / "model.xml"))
                        (staged / "made.json").write_text(json.dumps(made.record()), encoding="utf-8")
        self.made = json.loads((folder / "made.json").read_text(encoding="utf-8"))
        return target

    def run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        return np.array(self.request.infer(feeds)[self.output], dtype=np.float32)


def int8_entry(calibration: list[str], spec: BoundSpec) -> str:
    """The int8 graph's cache entry: a key of its calibration texts and of its bound (the bound's
    texts, held back or an eval set's, and its largest drop)."""
    measured = list(spec.texts) if spec.task is None else [f"eval set {spec.task.set_name}", *spec.task.texts()]
    return f"int8-{calibrated_key([*calibration, chr(0), *measured, chr(0), repr(spec.max_drop)])}"


def calibrated_key(texts: list[str]) -> str:
    """The calibration sample's part of an int8 graph's key: a hash of its texts, in order."""
    import hashlib

    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8") + b"\0")
    return digest.hexdigest()[:32]


def _nncf() -> Any:
    """NNCF, imported with its usage telemetry off (it would send it without asking)."""
    import os

    os.environ["NNCF_CI"] = "1"  # NNCF's own switch: its telemetry becomes a stub
    import nncf

    return nncf


def _nncf_quantize(model: Any, batches: list[dict[str, np.ndarray]], kept: list[str] | None = None) -> Any:
    """NNCF's static int8 of an OpenVINO model: preset MIXED, the transformer model type, every
    calibration batch, the matrix products ``kept`` left in f32 (its ignored scope); its progress
    bars and log lines kept off the job's output."""
    import contextlib
    import io
    import logging

    nncf = _nncf()
    # NNCF's logger's level, for this call only; not nncf.set_log_level, which also sets the level
    # of every handler on its logger for good (under pytest, the log capture's own handlers)
    logger = logging.getLogger("nncf")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return nncf.quantize(
                model,
                nncf.Dataset(batches),
                model_type=nncf.ModelType.TRANSFORMER,
                preset=nncf.QuantizationPreset.MIXED,
                subset_size=len(batches),
                ignored_scope=nncf.IgnoredScope(names=list(kept), validate=False) if kept else None,
            )
    finally:
        logger.setLevel(level)
