"""DeCLUTR (Giorgi et al. 2021, ACL) as the healthcare-LM paper trains it (section 2.3.2,
eqs. 2-3 and 5): L = L_MLM + w x L_contrastive.

Per document, ``num_anchors`` anchor spans and ``num_positives`` positives per anchor
(:mod:`clinsent.augment.declutr_spans`, the reference sampler over whitespace tokens). The
anchors are masked for MLM and that masked input also gives the anchor embeddings (one pass,
as the reference does); the positives go through the encoder unmasked and are averaged per
anchor; NT-Xent at tau over the 2N embeddings (:func:`clinsent.losses.contrastive.nt_xent`),
anchors of the same document being negatives of each other, as in the reference. Mean pooling,
no projection head. The loss module is :mod:`clinsent.losses.declutr`.

Documents shorter than 2 x num_anchors x max_span words cannot be sampled: they are skipped and
counted when the train job reads them (the paper's Table 12 gives the share each minimum keeps;
the ``documents`` rule writes it for your notes). The paper's defaults: batch 32 documents,
learning rate 1e-5, span lengths 16-1024 by dataset (1024 for MIMIC-III), the "adjacent"
strategy, 3 epochs; ``contrastive_weight`` 1 (the paper sweeps w for the note objective).
"""

from __future__ import annotations

from dataclasses import dataclass

from clinsent.augment.declutr_spans import Strategy, min_tokens
from clinsent.config.declare import knob
from clinsent.config.sections import RunConfig
from clinsent.data import DataNeed
from clinsent.data.documents import DocumentRows
from clinsent.methods.base import METHODS
from clinsent.methods.mlm import DocumentMethod, MlmSettings


@dataclass(frozen=True)
class DeclutrSettings(MlmSettings):
    batch_size: int = knob(32, "documents per step (the paper: 32; DeCLUTR's own: 4)", minimum=2)
    num_anchors: int = knob(2, "anchor spans per document (A)", minimum=1)
    num_positives: int = knob(2, "positive spans per anchor (P), averaged into one embedding", minimum=1)
    min_span: int = knob(32, "shortest span in whitespace tokens", minimum=1)
    max_span: int = knob(512, "longest span; documents need 2 x num_anchors x max_span words", minimum=1)
    strategy: Strategy = knob(
        "adjacent",
        "where positives lie: any (adjacent, overlapping or subsumed: DeCLUTR's "
        "default), subsuming, or adjacent (the paper)",
    )
    temperature: float = knob(0.05, "tau of NT-Xent", exclusiveMinimum=0)
    contrastive_weight: float = knob(1.0, "w of eq. 5", minimum=0)


@METHODS.register("declutr", settings=DeclutrSettings)
class Declutr(DocumentMethod[DeclutrSettings]):
    loss_class = "clinsent.losses.declutr:DeclutrLoss"  # imported by build_loss alone
    reference = (
        "DeCLUTR (Giorgi et al. 2021, ACL) as the healthcare-LM paper trains it (Taylor et al., section 2.3.2, "
        "eqs. 2-3 and 5)"
    )
    in_batch_negatives = True

    def data_need(self) -> DataNeed | None:
        s = self.settings
        return DocumentRows(s.documents, s.batch_size, min_words=min_tokens(s.num_anchors, s.max_span))

    def check(self, where: str, config: RunConfig) -> None:
        from clinsent.errors import InputError

        s = self.settings
        if s.min_span > s.max_span:
            raise InputError(
                f"{where}.min_span",
                f"min_span {s.min_span} exceeds max_span {s.max_span}",
                "make min_span at most max_span",
            )
