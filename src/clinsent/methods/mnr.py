"""Multiple-negatives ranking (Henderson et al. 2017; sentence-transformers'
``MultipleNegativesRankingLoss``), as the clinical sentence-transformers NLI study trains it
("Clinical sentence-transformers on NLI", Training: mean pooling, MNR loss, batch 16, warm-up
10% of the steps, epochs 1 on SNLI+MultiNLI and 10 on MedNLI).

The loss is cross-entropy over the scaled cosines of each anchor with every positive of the
batch (and, with ``hard_negatives``, every contradiction hypothesis), the anchor's own positive
the target: L = -1/N sum_i log softmax_j(s * cos(a_i, b_j))[i] with s = 1 / temperature (the
library's scale 20 = temperature 0.05). That is supervised SimCSE's eq. 5 with mean pooling and
no MLP, so the method shares its loss module (:mod:`clinsent.methods.sup_simcse`); a test checks
it against the library's loss on the same batch. Which NLI pairs the study fed the loss is not
stated beyond "only the entailment and contradiction samples were used": the default uses the
contradiction hypotheses as hard negatives (the library's NLI recipe), ``hard_negatives:
false`` the entailment pairs alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from clinsent.config.declare import knob
from clinsent.methods.base import METHODS
from clinsent.methods.knobs import Pooling
from clinsent.methods.sup_simcse import SupervisedSimCSE, SupSimCSESettings


@dataclass(frozen=True)
class MnrSettings(SupSimCSESettings):
    pooling: Pooling = knob("mean", "mean pooling (the study's sentence-transformers Pooling layer)")
    batch_size: int = knob(16, "pairs per batch (the study: 16)", minimum=2)
    learning_rate: float = knob(2e-5, "peak learning rate (sentence-transformers' default)", exclusiveMinimum=0)
    warmup_ratio: float = knob(0.1, "share of the steps with a linear warm-up (the study: 10%)", minimum=0, maximum=1)
    temperature: float = knob(0.05, "1 / scale (sentence-transformers' scale 20)", exclusiveMinimum=0)


@METHODS.register("mnr", settings=MnrSettings)
class MultipleNegativesRanking(SupervisedSimCSE[MnrSettings]):
    reference = (
        "multiple-negatives ranking (Henderson et al. 2017) as the clinical sentence-transformers NLI study trains it"
    )
