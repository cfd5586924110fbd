#!/usr/bin/env python3
"""Writes configs/demo/sort_tokens.jsonl, the demo's pre-tokenized instruction data.

Each sample asks the model to sort a list of numbers: tokens are
[BOS, x1 .. xn, SEP, sorted(x) .., EOS]; the prompt's labels are masked with -100, so the loss
covers only the answer, as an instruction dataset with train_on_input = false has it. Ids:
0 pad, 1 BOS, 2 EOS, 3 SEP, 4..63 the numbers 0..59. Deterministic (seed 1234).
"""
import json
import pathlib
import random

BOS, EOS, SEP, FIRST_NUMBER, VOCAB = 1, 2, 3, 4, 64


def sample(rng: random.Random) -> dict:
    n = rng.randint(4, 16)
    numbers = [rng.randrange(FIRST_NUMBER, VOCAB) for _ in range(n)]
    prompt = [BOS] + numbers + [SEP]
    answer = sorted(numbers) + [EOS]
    return {"tokens": prompt + answer, "labels": [-100] * len(prompt) + answer}


def main() -> None:
    rng = random.Random(1234)
    out = pathlib.Path(__file__).resolve().parent.parent / "configs" / "demo" / "sort_tokens.jsonl"
    with out.open("w") as f:
        for _ in range(2048):
            f.write(json.dumps(sample(rng), separators=(",", ":")) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
