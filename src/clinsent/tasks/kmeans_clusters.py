"""k-means on document embeddings (the healthcare-LM paper's Table 9): scikit-learn's
``KMeans`` with k = the number of classes (or ``k``), seeded, on the L2-normalised embeddings;
Davies-Bouldin (lower is better), Calinski-Harabasz and silhouette (higher is better) of the
clustering, and the adjusted Rand index against the classes. Silhouette is O(n^2): above
``silhouette_sample`` documents scikit-learn's seeded ``sample_size`` is used (stated in the
metrics as ``silhouette_n``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from clinsent.settings import knob
from clinsent.tasks.base import TASKS
from clinsent.tasks.labelled_docs import LabelledDocsSettings, LabelledDocsTask


@dataclass(frozen=True)
class KMeansSettings(LabelledDocsSettings):
    k: int | None = knob(None, "clusters (null: the number of classes)", minimum=2)
    n_init: int = knob(10, "k-means restarts", minimum=1)
    silhouette_sample: int = knob(10_000, "documents behind the silhouette (all when fewer)", minimum=2)
    seed: int = knob(0, "seed of k-means and of the silhouette sample", minimum=0)


def silhouette(x: np.ndarray, clusters: np.ndarray, sample: int | None, seed: int) -> float:
    """scikit-learn's silhouette, its pairwise distances computed in chunks of at most 64 MB
    (its default working memory is 1 GB)."""
    from sklearn import config_context
    from sklearn.metrics import silhouette_score

    with config_context(working_memory=64):
        return float(silhouette_score(x, clusters, sample_size=sample, random_state=seed))


@TASKS.register("kmeans_clusters")
class KMeansClusters(LabelledDocsTask):
    name = "kmeans_clusters"
    settings_class = KMeansSettings
    headline = "silhouette"
    metrics = ("davies_bouldin", "calinski_harabasz", "silhouette", "adjusted_rand", "k")

    def score(self, texts: list[str], vectors: np.ndarray, context: Mapping[str, Any] | None = None) -> dict[str, float]:
        from sklearn.cluster import KMeans
        from sklearn.metrics import adjusted_rand_score, calinski_harabasz_score, davies_bouldin_score

        s = self.settings
        x, classes = self.labelled_vectors(texts, vectors)
        k = s.k or len(np.unique(classes))
        clusters = KMeans(n_clusters=k, n_init=s.n_init, random_state=s.seed).fit_predict(x)
        sample = len(x) if len(x) <= s.silhouette_sample else s.silhouette_sample
        return {
            "davies_bouldin": float(davies_bouldin_score(x, clusters)),
            "calinski_harabasz": float(calinski_harabasz_score(x, clusters)),
            "silhouette": silhouette(x, clusters, sample if sample < len(x) else None, s.seed),
            "adjusted_rand": float(adjusted_rand_score(classes, clusters)),
            "k": float(k), "silhouette_n": float(sample),
        }
