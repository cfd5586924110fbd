#!/usr/bin/env python3
"""Writes configs/demo/sort_tokens.jsonl, the demo's pre-tokenized instruction data, and
configs/demo/sort_heldout.jsonl, the held-out lists `fthost generate` asks the trained model to sort.

Each sample asks the model to sort a list of distinct numbers: tokens are
[BOS, x1 .. xn, SEP, sorted(x) .., EOS]; the prompt's labels are masked with -100, so the loss
covers only the answer, as an instruction dataset with train_on_input = false has it. Ids:
0 pad, 1 BOS, 2 EOS, 3 SEP, 4..63 the numbers 0..59. Deterministic (seed 1234).
Distinct, because a repeated number asks the model to count, which the demo's 0.8M-parameter
model does not learn in its 512 steps: with repeats allowed its loss ends near 0.2 and it sorts
under half of the held-out lists; with distinct numbers the loss ends near 0.01.

The held-out prompts come from another seed (5678), none with a list the training data holds:
{"tokens": [BOS, x1 .. xn, SEP], "expected": sorted(x)}, the answer without its EOS (generation
stops at EOS and leaves it out).
"""
import json
import pathlib
import random

BOS, EOS, SEP, FIRST_NUMBER, VOCAB = 1, 2, 3, 4, 64
HELDOUT_PROMPTS = 20


def sample(rng: random.Random) -> dict:
    n = rng.randint(4, 16)
    numbers = rng.sample(range(FIRST_NUMBER, VOCAB), n)
    prompt = [BOS] + numbers + [SEP]
    answer = sorted(numbers) + [EOS]
    return {"tokens": prompt + answer, "labels": [-100] * len(prompt) + answer}


def main() -> None:
    rng = random.Random(1234)
    demo = pathlib.Path(__file__).resolve().parent.parent / "configs" / "demo"
    out = demo / "sort_tokens.jsonl"
    trained_prompts = set()
    with out.open("w") as f:
        for _ in range(2048):
            s = sample(rng)
            trained_prompts.add(tuple(s["tokens"][: s["labels"].count(-100)]))
            f.write(json.dumps(s, separators=(",", ":")) + "\n")
    print(f"wrote {out}")

    heldout_rng = random.Random(5678)
    heldout = demo / "sort_heldout.jsonl"
    written = 0
    with heldout.open("w") as f:
        while written < HELDOUT_PROMPTS:
            s = sample(heldout_rng)
            prompt_length = s["labels"].count(-100)
            prompt = s["tokens"][:prompt_length]
            if tuple(prompt) in trained_prompts:
                continue
            expected = s["tokens"][prompt_length:-1]
            f.write(json.dumps({"tokens": prompt, "expected": expected}, separators=(",", ":")) + "\n")
            written += 1
    print(f"wrote {heldout}")


if __name__ == "__main__":
    main()
