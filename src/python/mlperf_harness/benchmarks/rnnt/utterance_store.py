"""RNN-T's samples in memory: each utterance's features padded to the longest ([frames, 240]
float32), gathered as one batch, and each utterance's own frame count beside them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mlperf_harness.datasets.librispeech.preprocess import PreprocessedUtterances
from mlperf_harness.harness.preloaded_store import PreloadedSampleStore


class UtteranceStore(PreloadedSampleStore):
    def __init__(self, utterances: PreprocessedUtterances, total: int, performance_count: int):
        features = utterances.features
        super().__init__(lambda indices: features[list(indices)], total, performance_count)
        self.lengths: npt.NDArray[np.int64] = utterances.lengths

    def sample_lengths(self) -> npt.NDArray[np.int64]:
        """A batch decodes until its longest utterance is done: Offline batches by length."""
        return self.lengths

    def batch_lengths(self, indices: Sequence[int]) -> npt.NDArray[np.int64]:
        result: npt.NDArray[np.int64] = self.lengths[np.asarray(indices, np.int64)]
        return result
