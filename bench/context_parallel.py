#!/usr/bin/env python3
"""Long sequences with and without context parallelism: peak RSS per rank and tokens/s of a
Llama-3.2-1B-shaped model (torchtune.models.llama3_2.llama3_2_1b, 1.24B parameters, random init)
in bf16 with activation checkpointing, one sequence per step. Not a test.

  python3 bench/context_parallel.py [--seqs 8192,16384] [--steps 1] [--rotate allgather]
                                    [--limit-gib 23] [--layouts 1,cp2]

- 1:   one rank, 2 threads.
- cp2: 2 ranks, 1 thread each, context_parallel_dim = 2 (each rank holds two of four chunks of
       the sequence), FSDP sharding the parameters, gradients and optimizer state over both.
Both run the optimizer step in backward and LinearCrossEntropyLoss (the output projection chunk
by chunk), so that what grows with the sequence is the activations. Every rank is capped at
--limit-gib of address space (RLIMIT_AS), so a sequence that does not fit fails with an
allocation error instead of exhausting the machine; it is reported as "does not fit". The two
ranks of a cp2 run share this machine, so together they must also fit in its memory. tokens/s is
the job's (all ranks), from the last step (with --steps 1, the first: it includes allocating the
optimizer state); peak RSS is rank 0's high-water mark (the ranks are symmetric), which at short
sequences is the model load's (every rank reads the whole checkpoint before it keeps its
shards). Run nothing else beside it (`uptime` first).
"""
import argparse
import json
import os
import pathlib
import resource
import shutil
import subprocess
import tempfile
import time

from run import random_token_data  # bench/run.py, beside this file

ROOT = pathlib.Path(__file__).resolve().parent.parent
FTHOST = ROOT / "build" / "bin" / "fthost"
CONFIG = ROOT / "bench" / "configs" / "llama_125m.toml"


def run(name, ranks, overrides, limit_bytes):
    launcher = ["--nproc-per-node", str(ranks)] if ranks > 1 else []
    out = pathlib.Path(tempfile.mkdtemp(prefix="fthost-cpbench-"))
    args = [str(FTHOST), *launcher, "--config", str(CONFIG), f"output_dir={out}", "log_every_n_steps=1",
            "log_peak_memory_stats=true", "shuffle=false",
            "metric_logger._component_=torchtune.training.metric_logging.DiskLogger",
            f"metric_logger.log_dir={out}/logs", "metric_logger.filename=metrics.jsonl",
            "metric_logger.output_fmt=jsonl"] + overrides

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, preexec_fn=cap)
    wall = time.perf_counter() - start
    text = proc.stdout + proc.stderr
    if proc.returncode != 0:
        shutil.rmtree(out, ignore_errors=True)
        why = "does not fit" if ("memory" in text.lower() or "alloc" in text.lower()) else f"failed rc={proc.returncode}"
        lines = text.strip().splitlines() or [""]
        reason = next((l for l in lines if "error" in l.lower() or "alloc" in l.lower()), lines[-1])
        print(f"{name:34s} {why:>14s} within {limit_bytes / 2**30:.1f} GiB per rank ({wall:.0f} s): "
              f"{reason.strip()[:160]}", flush=True)
        return None
    rows = [json.loads(l) for l in (out / "logs" / "metrics.jsonl").read_text().splitlines() if l.strip()]
    shutil.rmtree(out, ignore_errors=True)
    result = {"tokens_per_s": rows[-1]["tokens_per_second_per_gpu"] * ranks,
              "peak_rss_gib": max(r["peak_memory_rss"] for r in rows), "loss": rows[-1]["loss"], "wall": wall}
    print(f"{name:34s} peak RSS {result['peak_rss_gib']:6.2f} GiB per rank  {result['tokens_per_s']:8.1f} tok/s  "
          f"loss {result['loss']:.4f}  ({wall:.0f} s)", flush=True)
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seqs", default="8192,16384")
    p.add_argument("--steps", type=int, default=1)
    p.add_argument("--rotate", default="allgather", choices=["allgather", "alltoall"])
    p.add_argument("--limit-gib", type=float, default=23)
    p.add_argument("--layouts", default="1,cp2")
    a = p.parse_args()
    print(f"{os.cpu_count()} cores; {a.steps} step(s) per run; address space per rank: {a.limit_gib:g} GiB",
          flush=True)
    data_dir = pathlib.Path(tempfile.mkdtemp(prefix="fthost-cpbench-data-"))
    common = ["~model", "model._component_=torchtune.models.llama3_2.llama3_2_1b", "dtype=bf16", "batch_size=1",
              f"max_steps_per_epoch={a.steps}", "enable_activation_checkpointing=true", "optimizer_in_bwd=true",
              "loss._component_=torchtune.modules.loss.LinearCrossEntropyLoss"]
    results = {}
    for seq in (int(s) for s in a.seqs.split(",")):
        data = data_dir / f"tokens_{seq}.jsonl"
        random_token_data(data, a.steps, seq, 128256)
        for layout in a.layouts.split(","):
            if layout == "1":
                ranks, extra, limit = 1, ["num_threads=2"], a.limit_gib
            else:
                ranks = 2
                extra = ["num_threads=1", "context_parallel_dim=2", f"context_parallel_rotate_method={a.rotate}"]
                limit = a.limit_gib
            results[(seq, layout)] = run(f"seq {seq:6d}, {layout:>3s} rank(s)" if layout == "1" else
                                         f"seq {seq:6d}, cp2 ({a.rotate})", ranks,
                                         common + [f"dataset.source={data}"] + extra, int(limit * 2**30))
        one, split = results.get((seq, "1")), results.get((seq, "cp2"))
        if one and split:
            print(f"  seq {seq}: cp2 / 1 rank: tokens/s x{split['tokens_per_s'] / one['tokens_per_s']:.2f}, "
                  f"peak RSS per rank x{split['peak_rss_gib'] / one['peak_rss_gib']:.2f}", flush=True)
    shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
