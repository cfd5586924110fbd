"""The benchmark's data for torchtune's recipe: the JSONL file bench/run.py's random_token_data
writes ({"tokens": [...], "labels": [...]} per line), as a `dataset` `_component_`, and the
smallest `tokenizer` the recipe accepts.

The recipe (torchtune 0.6.1) counts a step's tokens as `labels != ignore_index` *before* it shifts
the labels left by one, so every sample whose first label is a real id counts one token the loss
never sees; fthost counts after the shift (docs/parity.md). The first label is never a target (the
shift drops it), so it is masked here: the loss and the gradients are unchanged, and both sides
then count exactly the batch x (sequence - 1) targets the loss sums over.
"""
import json
from types import SimpleNamespace

from torch.utils.data import Dataset
from torchtune.data import CROSS_ENTROPY_IGNORE_IDX


class RandomTokenDataset(Dataset):
    def __init__(self, source: str):
        with open(source) as f:
            self._samples = [json.loads(line) for line in f if line.strip()]

    def __len__(self) -> int:
        return len(self._samples)

    def __getitem__(self, index: int) -> dict:
        sample = self._samples[index]
        return {"tokens": list(sample["tokens"]),
                "labels": [CROSS_ENTROPY_IGNORE_IDX] + list(sample["labels"][1:])}


def random_token_dataset(tokenizer, source: str) -> RandomTokenDataset:
    """The recipe instantiates datasets as builder(tokenizer, **config); the data is pre-tokenized."""
    return RandomTokenDataset(source)


def stub_tokenizer(max_seq_len: int = None, pad_id: int = 0) -> SimpleNamespace:
    """The recipe reads only pad_id (for its collate), and the samples are never padded: all are
    the same length."""
    return SimpleNamespace(pad_id=pad_id, max_seq_len=max_seq_len)
