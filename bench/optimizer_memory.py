#!/usr/bin/env python3
"""Optimizer state and peak memory: torch.optim.AdamW against bitsandbytes.optim.AdamW8bit (and
PagedAdamW8bit, the same on the CPU). Not a test.

  .venv/bin/python bench/optimizer_memory.py [--layers 2] [--steps 4] [--rounds 2]

Trains Llama 3.2 1B's shape (embed 2048, 32 heads, 8 KV heads, MLP 8192, 128K vocabulary, tied
embeddings) at reduced depth (--layers of its 16) from its initialisation on the tiny Alpaca
fixture (batch 1, sequences up to 256 tokens, float32): each optimizer's peak RSS (`wait4`) and
tokens/s (the median of the logged steps after the first), in interleaved rounds. Also prints the
optimizer state's bytes for the full Llama 3.2 1B and 3B, counted from their parameter shapes:
AdamW keeps two float32 moments per value; AdamW8bit one byte per moment plus one float32 absmax
per 256 values, and float32 moments for tensors below 4096 values (the norms).
Run nothing else beside it (`uptime` first).
"""
import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
FTHOST = ROOT / "build" / "bin" / "fthost"
FIXTURES = pathlib.Path(os.environ.get("FT_FIXTURES") or ROOT.parent / "shared" / "fixtures")


def llama_shapes(layers, dim, heads, kv_heads, hidden, vocab):
    head_dim = dim // heads
    shapes = [(vocab, dim), (dim,)]  # tied embedding, final norm
    for _ in range(layers):
        shapes += [(dim, dim), (kv_heads * head_dim, dim), (kv_heads * head_dim, dim), (dim, dim),
                   (hidden, dim), (hidden, dim), (dim, hidden), (dim,), (dim,)]
    return shapes


def state_bytes(shapes):
    adamw = eight = 0
    for s in shapes:
        n = 1
        for d in s:
            n *= d
        adamw += 8 * n
        eight += 8 * n if n < 4096 else 2 * n + 8 * ((n + 255) // 256)
    return adamw, eight


def run(optimizer, layers, steps, out):
    args = [str(FTHOST), "--config", str(ROOT / "configs" / "tiny_alpaca_llama3.toml"),
            f"tokenizer.path={FIXTURES / 'tokenizers' / 'llama3' / 'tokenizer.json'}",
            f"dataset.source={FIXTURES / 'data' / 'alpaca_tiny.json'}", f"output_dir={out}",
            f"model.num_layers={layers}", "model.num_heads=32", "model.num_kv_heads=8", "model.embed_dim=2048",
            "model.intermediate_dim=8192", "model.max_seq_len=2048", "model.tie_word_embeddings=true",
            "batch_size=1", f"max_steps_per_epoch={steps}", "epochs=1", "log_every_n_steps=1",
            f"optimizer._component_={optimizer}", "optimizer.lr=1e-4",
            "metric_logger._component_=torchtune.training.metric_logging.DiskLogger",
            f"metric_logger.log_dir={out}/logs", "metric_logger.filename=metrics.jsonl",
            "metric_logger.output_fmt=jsonl", "save_every_n_steps=0"]
    log = pathlib.Path(out) / "run.log"
    start = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.Popen(args, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT,
                                env=dict(os.environ, OMP_WAIT_POLICY="PASSIVE"))
        _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(log.read_text()[-3000:])
    rows = [json.loads(line) for line in (pathlib.Path(out) / "logs" / "metrics.jsonl").read_text().splitlines()]
    rates = [r["tokens_per_second_per_gpu"] for r in rows if "tokens_per_second_per_gpu" in r][1:]
    return usage.ru_maxrss / 2**20, statistics.median(rates) if rates else float("nan"), time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    a = parser.parse_args()
    for name, shapes in (("Llama 3.2 1B", llama_shapes(16, 2048, 32, 8, 8192, 128256)),
                         ("Llama 3.2 3B", llama_shapes(28, 3072, 24, 8, 8192, 128256)),
                         (f"1B shape, {a.layers} layers", llama_shapes(a.layers, 2048, 32, 8, 8192, 128256))):
        adamw, eight = state_bytes(shapes)
        print(f"{name}: optimizer state AdamW {adamw / 2**30:.2f} GiB, AdamW8bit {eight / 2**30:.2f} GiB "
              f"({eight / adamw:.3f}x)")
    optimizers = ["torch.optim.AdamW", "bitsandbytes.optim.AdamW8bit"]
    peaks = {o: [] for o in optimizers}
    rates = {o: [] for o in optimizers}
    with tempfile.TemporaryDirectory(prefix="fthost-optimizer-bench-") as tmp:
        for r in range(a.rounds):
            for o in (optimizers if r % 2 == 0 else list(reversed(optimizers))):
                out = pathlib.Path(tmp) / f"{r}-{o}"
                out.mkdir()
                peak, rate, seconds = run(o, a.layers, a.steps, out)
                peaks[o].append(peak)
                rates[o].append(rate)
                print(f"  round {r}: {o}: peak RSS {peak:.2f} GiB, {rate:.1f} tokens/s, {seconds:.0f} s", flush=True)
    base = optimizers[0]
    for o in optimizers:
        print(f"{o}: peak RSS {statistics.median(peaks[o]):.2f} GiB "
              f"({statistics.median(peaks[o]) / statistics.median(peaks[base]):.3f}x), "
              f"{statistics.median(rates[o]):.1f} tokens/s "
              f"({statistics.median(rates[o]) / statistics.median(rates[base]):.3f}x)")


if __name__ == "__main__":
    main()
