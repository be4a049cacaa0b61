"""k-means on document embeddings (the healthcare-LM paper's Table 9): scikit-learn's
``KMeans``, seeded, on the raw embeddings (``normalize: true`` L2-normalises them first);
Davies-Bouldin (lower is better), Calinski-Harabasz and silhouette (higher is better) of the
clustering, and the adjusted Rand index against the classes.

The paper reports an "optimal K" (4-6 for its 7 teams), so by default K is chosen: each K of
``k_min`` .. ``k_max`` is fitted and the one with the best silhouette is kept and reported as
``k`` (``k_choice: classes`` uses the number of classes, the earlier default; ``k`` fixes it).
Silhouette is O(n^2): above ``silhouette_sample`` documents scikit-learn's seeded
``sample_size`` is used (stated in the metrics as ``silhouette_n``), for the choice and the score.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from clinsent.config.declare import SEED_MAX, knob
from clinsent.errors import InputError
from clinsent.tasks.base import TASKS
from clinsent.tasks.labelled_docs import LabelledDocsSettings, LabelledDocsTask


@dataclass(frozen=True)
class KMeansSettings(LabelledDocsSettings):
    k: int | None = knob(None, "a fixed number of clusters (null: chosen by k_choice)", minimum=2)
    k_choice: Literal["silhouette", "classes"] = knob(
        "silhouette",
        "silhouette: the K of k_min..k_max with the best silhouette (the paper's optimal K); classes: "
        "the number of classes",
    )
    k_min: int = knob(2, "k_choice silhouette: the smallest K tried", minimum=2)
    k_max: int = knob(10, "k_choice silhouette: the largest K tried (at most the documents - 1)", minimum=2)
    normalize: bool = knob(
        False,
        "L2-normalise the embeddings before clustering (false: the raw vectors, as the paper's scikit-learn defaults)",
    )
    n_init: int = knob(10, "k-means restarts", minimum=1)
    silhouette_sample: int = knob(10_000, "documents behind the silhouette (all when fewer)", minimum=2)
    seed: int = knob(0, "seed of k-means and of the silhouette sample", minimum=0, maximum=SEED_MAX)


def silhouette(x: np.ndarray, clusters: np.ndarray, sample: int | None, seed: int) -> float:
    """scikit-learn's silhouette, its pairwise distances computed in chunks of at most 64 MB
    (its default working memory is 1 GB)."""
    from sklearn import config_context
    from sklearn.metrics import silhouette_score

    with config_context(working_memory=64):
        return float(silhouette_score(x, clusters, sample_size=sample, random_state=seed))


@TASKS.register("kmeans_clusters", settings=KMeansSettings)
class KMeansClusters(LabelledDocsTask[KMeansSettings]):
    headline = "silhouette"
    metrics = ("davies_bouldin", "calinski_harabasz", "silhouette", "adjusted_rand", "k")
    not_differenced = ("k",)  # chosen by the silhouette: no paired difference

    def __init__(self, set_name: str, settings: KMeansSettings) -> None:
        super().__init__(set_name, settings)
        if settings.k_min > settings.k_max:
            raise InputError(
                f"config: eval_sets.{set_name}.k_min",
                f"{settings.k_min} is above k_max {settings.k_max}",
                "give k_min <= k_max",
            )

    def score(
        self, texts: list[str], vectors: np.ndarray, context: Mapping[str, Any] | None = None
    ) -> dict[str, float]:
        from sklearn.cluster import KMeans
        from sklearn.metrics import adjusted_rand_score, calinski_harabasz_score, davies_bouldin_score

        s = self.settings
        x, classes = self.labelled_vectors(texts, vectors, normalize=s.normalize)
        sample = len(x) if len(x) <= s.silhouette_sample else s.silhouette_sample
        n_sample = sample if sample < len(x) else None

        def fit(k: int) -> tuple[np.ndarray, float]:
            clusters = KMeans(n_clusters=k, n_init=s.n_init, random_state=s.seed).fit_predict(x)
            return clusters, silhouette(x, clusters, n_sample, s.seed)

        if s.k or s.k_choice == "classes":
            k = s.k or len(np.unique(classes))
            clusters, sil = fit(k)
        else:
            tried = {k: fit(k) for k in range(s.k_min, min(s.k_max, len(x) - 1) + 1)}
            k = max(tried, key=lambda kk: (tried[kk][1], -kk))  # the best silhouette; a tie: the smaller K
            clusters, sil = tried[k]
        return {
            "davies_bouldin": float(davies_bouldin_score(x, clusters)),
            "calinski_harabasz": float(calinski_harabasz_score(x, clusters)),
            "silhouette": sil,
            "adjusted_rand": float(adjusted_rand_score(classes, clusters)),
            "k": float(k),
            "silhouette_n": float(sample),
        }
