"""The untrained base model (``objective: none``): MED-SE Table 3's BERT / BioBERT /
ClinicalBERT rows, evaluated at step 0 with the method's pooling (and, at evaluation, the
entry's ``postprocess``: WhiteningBERT or BERT-flow)."""

from __future__ import annotations

from clinsent.methods.base import METHODS, Method
from clinsent.methods.knobs import MethodSettings


@METHODS.register("none", settings=MethodSettings)
class Untrained(Method[MethodSettings]):
    reference = "the untrained base model (MED-SE Table 3's baseline rows)"
