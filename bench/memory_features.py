#!/usr/bin/env python3
"""What the memory features buy: peak RSS and tokens/s of fthost with and without activation
checkpointing (AC) and the optimizer step in backward, in one invocation. Not a test.

  python3 bench/memory_features.py [--only 1b|125m] [--dtypes fp32,bf16] [--steps 2] [--limit-gib 23]

- 1b:   a Llama-3.2-1B-shaped model (torchtune.models.llama3_2.llama3_2_1b, 1.24B parameters,
        random init), batch 1 x 2048 tokens: nothing / AC / AC + optimizer in backward.
- 125m: bench/configs/llama_125m.toml at batch 8 x 1024: nothing / AC.

Each run is capped at --limit-gib of address space (RLIMIT_AS), so a configuration that does not
fit fails with LibTorch's allocation error instead of pushing the machine into swap or the OOM
killer; it is reported as "does not fit". tokens/s is the median over the steps after the first
(the first allocates the optimizer state); peak RSS is the process's high-water mark.
"""
import argparse
import json
import os
import pathlib
import resource
import statistics
import subprocess
import tempfile
import time

from run import random_token_data  # bench/run.py, beside this file

ROOT = pathlib.Path(__file__).resolve().parent.parent
FTHOST = ROOT / "build" / "bin" / "fthost"
CONFIG = ROOT / "bench" / "configs" / "llama_125m.toml"


def run(name, overrides, limit_bytes):
    out = pathlib.Path(tempfile.mkdtemp(prefix="fthost-membench-"))
    args = [str(FTHOST), "--config", str(CONFIG), f"output_dir={out}", "log_every_n_steps=1",
            "log_peak_memory_stats=true", "num_threads=2", "shuffle=false"] + overrides

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, preexec_fn=cap)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        text = proc.stdout + proc.stderr
        why = "does not fit" if ("memory" in text.lower() or proc.returncode < 0) else f"failed rc={proc.returncode}"
        lines = text.strip().splitlines() or [""]
        reason = next((l for l in lines if "memory" in l.lower() or "error" in l.lower()), lines[-1])
        print(f"{name:36s} {why:>14s} within {limit_bytes / 2**30:.0f} GiB ({wall:.0f} s): {reason.strip()[:150]}",
              flush=True)
        return None
    rows = [json.loads(l) for l in (out / "logs" / "metrics.jsonl").read_text().splitlines() if l.strip()]
    steady = rows[1:] or rows
    result = {
        "tokens_per_s": statistics.median(r["tokens_per_second_per_gpu"] for r in steady),
        "peak_rss_gib": max(r["peak_memory_rss"] for r in rows),
        "loss": rows[-1]["loss"],
    }
    print(f"{name:36s} peak RSS {result['peak_rss_gib']:6.2f} GiB  {result['tokens_per_s']:9.1f} tok/s  "
          f"loss {result['loss']:.4f}  ({wall:.0f} s)", flush=True)
    return result


def ratio_line(label, base, other):
    if base and other:
        print(f"  {label}: step time x{base['tokens_per_s'] / other['tokens_per_s']:.2f}, "
              f"peak RSS {other['peak_rss_gib']:.2f} vs {base['peak_rss_gib']:.2f} GiB", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--only", choices=["1b", "125m"])
    p.add_argument("--dtypes", default="fp32,bf16")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--limit-gib", type=float, default=23)
    p.add_argument("--variants", default="none,ac,ac+oib", help="subset of none,ac,ac+oib")
    a = p.parse_args()
    limit = int(a.limit_gib * 2**30)
    variants = {"none": [], "ac": ["enable_activation_checkpointing=true"],
                "ac+oib": ["enable_activation_checkpointing=true", "optimizer_in_bwd=true"]}
    chosen = [v for v in a.variants.split(",") if v]
    logger = ["metric_logger._component_=torchtune.training.metric_logging.DiskLogger",
              "metric_logger.filename=metrics.jsonl", "metric_logger.output_fmt=jsonl"]
    data_dir = pathlib.Path(tempfile.mkdtemp(prefix="fthost-membench-data-"))
    print(f"{os.cpu_count()} cores; address space capped at {a.limit_gib:g} GiB per run; {a.steps} steps each")

    if a.only in (None, "1b"):
        data = data_dir / "tokens_1b.jsonl"
        random_token_data(data, 4, 2048, 128256)
        model = ["~model", "model._component_=torchtune.models.llama3_2.llama3_2_1b", f"dataset.source={data}",
                 "batch_size=1", f"max_steps_per_epoch={a.steps}"]
        for dtype in a.dtypes.split(","):
            results = {v: run(f"1B {dtype} batch 1x2048 {v}", model + logger + [f"dtype={dtype}"] + variants[v], limit)
                       for v in chosen}
            ratio_line(f"1B {dtype} AC vs none", results.get("none"), results.get("ac"))
            ratio_line(f"1B {dtype} AC+OIB vs AC", results.get("ac"), results.get("ac+oib"))

    if a.only in (None, "125m"):
        data = data_dir / "tokens_125m.jsonl"
        random_token_data(data, 8 * a.steps, 1024, 32000)
        model = [f"dataset.source={data}", "model.max_seq_len=1024", "batch_size=8", f"max_steps_per_epoch={a.steps}"]
        results = {v: run(f"125M fp32 batch 8x1024 {v}", model + logger + variants[v], limit)
                   for v in ("none", "ac")}
        ratio_line("125M AC vs none", results["none"], results["ac"])


if __name__ == "__main__":
    main()
