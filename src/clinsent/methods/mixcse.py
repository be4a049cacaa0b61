"""MixCSE and instance weighting (the biomedical augmentation paper, section 3.2, eq. 3-5):
unsupervised SimCSE whose softmax also holds mixed hard negatives (MixCSE, Zhang et al. 2022)
and whose likely false negatives, judged by a frozen complementary model, are removed from the
denominator (instance weighting, DCLR: Zhou et al. 2022). The paper's rows are settings of this
one method: MixCSE-Instance weighting (both), -MixCSE (``mixing: false``), -Instance weighting
(``instance_weighting: false``), and P+M (with ``augmentation: punctuation_insertion``).
The logits, the weights and the loss module are :mod:`clinsent.losses.mixcse` (which also says
where the paper and the reference codes differ).

Where the paper is silent (OPEN): which mixed negatives an instance weight removes. Here a mixed
negative takes the weight of the sentence that dominates it (weight 1 - lam): the weight
alpha_ij of anchor i and sentence j applies to the in-batch negative j, to block 1's mixed
negative dominated by z2_j (column j - 1, m_{j-1} = lam z2_{j-1} + (1 - lam) z2_j), to block 2's
entries whose mixed anchor is dominated by z1_i (row i - 1) and, with ``mix_form: paper_eq3``, to
m_ij. The complementary model embeds the first view with the method's pooling
(no MLP), in eval mode and without gradient. DCLR's is a separately trained SimCSE checkpoint:
``complementary_model: simcse`` names the config's SimCSE method, whose trained model of the same
base model and seed the job loads (the DAG trains it first, and retraining it reruns this job);
with ``null`` it is a frozen copy of the base model taken before training.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from clinsent.config.declare import knob
from clinsent.config.sections import RunConfig
from clinsent.errors import InputError
from clinsent.methods.base import METHODS
from clinsent.methods.knobs import Pooling
from clinsent.methods.simcse import SimCSE, SimCSESettings


@dataclass(frozen=True)
class MixCSESettings(SimCSESettings):
    pooling: Pooling = knob("cls", "as for every method; the paper: CLS with an MLP used in training only")
    mixing: bool = knob(True, "add MixCSE's mixed hard negatives")
    mix_lambda: float = knob(0.2, "lambda of the mixing (MixCSE's --lambdas)", minimum=0, maximum=1)
    mix_form: Literal["reference_code", "paper_eq3"] = knob(
        "reference_code",
        "reference_code: MixCSE's code (mixed from the next in-batch positive, zeroed entries; the "
        "MixCSE runs the papers report were trained with it); paper_eq3: MixCSE's eq. 3, one mixed "
        "negative per anchor and negative from the anchor's own positive (harder)",
    )
    mix_symmetric: bool = knob(
        True, "reference_code: also the second block (mixed anchors against the positives), as the code"
    )
    instance_weighting: bool = knob(True, "remove negatives the complementary model finds too similar")
    phi: float = knob(0.9, "instance-weighting threshold on the complementary model's cosine", minimum=-1, maximum=1)
    complementary_model: str | None = knob(
        None,
        "the frozen complementary model: a key of methods (that run's trained "
        "model, same base model and seed, trained first: DCLR's trained "
        "SimCSE) or a base_models form; null: a frozen copy of the base model",
    )


# what the instance weighting logs per eval step (MixCSELoss.statistics)
STATISTICS = ("zero_weight_share", "mean_weight")


@METHODS.register("mixcse", settings=MixCSESettings)
class MixCSE(SimCSE[MixCSESettings]):
    loss_class = "clinsent.losses.mixcse:MixCSELoss"  # imported by build_loss alone
    reference = (
        "MixCSE with instance weighting (the biomedical augmentation paper, section 3.2, eqs. 3-5; Zhang et al. "
        "2022; Zhou et al. 2022)"
    )

    def check(self, where: str, config: RunConfig) -> None:
        super().check(where, config)
        s = self.settings
        if not s.mixing and not s.instance_weighting:
            raise InputError(
                where,
                "mixing and instance_weighting are both off (that is plain SimCSE)",
                "use objective simcse, or switch one of them on",
            )
        if s.mixing and s.mix_form == "paper_eq3" and s.mix_symmetric:
            raise InputError(
                f"{where}.mix_symmetric",
                "eq. 3 has one block of mixed negatives (no symmetric one)",
                "set mix_symmetric: false with mix_form: paper_eq3",
            )

    def extra_models(self) -> list[str]:
        s = self.settings
        return [s.complementary_model] if s.instance_weighting and s.complementary_model else []

    def curve_statistics(self) -> list[str]:
        s = self.settings
        return list(STATISTICS) if s.instance_weighting else []
