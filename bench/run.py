#!/usr/bin/env python3
"""Benchmarks fthost training throughput and memory. Not a test: prints medians and ratios.

  python3 bench/run.py [--repeats 3] [--only demo|125m|threads|distributed|custom_sharded|prefetch]

Each scenario runs the real fthost binary (build/bin/fthost) and reads its JSONL metrics:
tokens_per_second_per_gpu (median over steps, the first step dropped as warm-up) and
peak_memory_rss. Ratios are taken within one invocation, since this machine drifts 10-20%
between runs.
"""
import argparse
import json
import os
import pathlib
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
FTHOST = ROOT / "build" / "bin" / "fthost"


def random_token_data(path: pathlib.Path, samples: int, seq_len: int, vocab: int) -> None:
    rng = random.Random(0)
    with path.open("w") as f:
        for _ in range(samples):
            tokens = [rng.randrange(vocab) for _ in range(seq_len)]
            f.write(json.dumps({"tokens": tokens, "labels": tokens}) + "\n")


def run(config: pathlib.Path, overrides: list, env_extra: dict, launcher: list = ()) -> dict:
    out = pathlib.Path(tempfile.mkdtemp(prefix="fthost-bench-"))
    env = dict(os.environ, **env_extra)
    args = [str(FTHOST), *launcher, "--config", str(config), f"output_dir={out}",
            "metric_logger._component_=torchtune.training.metric_logging.DiskLogger",
            f"metric_logger.log_dir={out}/logs", "metric_logger.filename=metrics.jsonl",
            "metric_logger.output_fmt=jsonl", "log_every_n_steps=1", "log_peak_memory_stats=true"] + overrides
    start = time.perf_counter()
    proc = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        shutil.rmtree(out, ignore_errors=True)
        sys.exit(f"fthost failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    rows = [json.loads(l) for l in (out / "logs" / "metrics.jsonl").read_text().splitlines() if l.strip()]
    steady = rows[1:] or rows
    gathered = re.search(r"at most (\d+) bytes of gathered parameters were held at once on rank 0 while training",
                         proc.stdout + proc.stderr)
    shutil.rmtree(out, ignore_errors=True)  # its checkpoints: 1.4 GB a 125M run
    return {
        "peak_gathered_mib": int(gathered.group(1)) / 2**20 if gathered else 0.0,
        "tokens_per_s": statistics.median(r["tokens_per_second_per_gpu"] for r in steady),
        "peak_rss_gib": max(r["peak_memory_rss"] for r in rows),
        "first_loss": rows[0]["loss"],
        "last_loss": rows[-1]["loss"],
        "wall_s": wall,
    }


def scenario(name, config, overrides, env, repeats, launcher=()):
    results = [run(config, overrides, env, list(launcher)) for _ in range(repeats)]
    summary = {k: statistics.median(r[k] for r in results) for k in results[0]}
    print(f"{name:48s} {summary['tokens_per_s']:10.0f} tok/s  peak RSS {summary['peak_rss_gib']:.2f} GiB  "
          f"loss {summary['first_loss']:.3f} -> {summary['last_loss']:.3f}  wall {summary['wall_s']:.1f} s", flush=True)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=["demo", "125m", "threads", "distributed", "custom_sharded", "prefetch"])
    a = parser.parse_args()
    passive = {"OMP_WAIT_POLICY": "PASSIVE"}
    print(f"median of {a.repeats} run(s) each; {os.cpu_count()} cores")
    if a.only in (None, "demo"):
        scenario("demo (tiny llama, its config: 1 thread)", ROOT / "configs" / "tiny_demo.toml", [], passive, a.repeats)
    if a.only in (None, "125m", "threads", "distributed"):
        data = pathlib.Path(tempfile.mkdtemp(prefix="fthost-bench-data-")) / "random_tokens.jsonl"
        random_token_data(data, samples=64, seq_len=256, vocab=32000)
        cfg = ROOT / "bench" / "configs" / "llama_125m.toml"
        src = [f"dataset.source={data}"]
        base = scenario("125M, 2 threads, OMP_WAIT_POLICY=PASSIVE", cfg, src + ["num_threads=2"], passive, a.repeats)
        if a.only in (None, "threads"):
            one = scenario("125M, 1 thread", cfg, src + ["num_threads=1"], passive, a.repeats)
            active = scenario("125M, 2 threads, OMP_WAIT_POLICY=ACTIVE", cfg, src + ["num_threads=2"],
                              {"OMP_WAIT_POLICY": "ACTIVE"}, a.repeats)
            print(f"ratio 2 threads / 1 thread: {base['tokens_per_s'] / one['tokens_per_s']:.2f}")
            print(f"ratio PASSIVE / ACTIVE:     {base['tokens_per_s'] / active['tokens_per_s']:.2f}")
        if a.only in (None, "distributed"):
            # Same samples per step: 1 rank x batch 4 vs 2 ranks x batch 2. tokens_per_second_per_gpu
            # is per rank, so the job's throughput is twice the logged value for 2 ranks.
            two = ["--nproc-per-node", "2"]
            for strategy in ("ddp", "fsdp"):
                r = scenario(f"125M, 2 ranks x 1 thread, {strategy}", cfg,
                             src + ["num_threads=1", "batch_size=2", f"parallelism._component_=fthost.parallelism.{strategy}"],
                             passive, a.repeats, two)
                print(f"scaling efficiency {strategy} (2 ranks x 1 thread vs 1 rank x 2 threads): "
                      f"{2 * r['tokens_per_s'] / base['tokens_per_s']:.2f}; rank 0 peak RSS {r['peak_rss_gib']:.2f} GiB "
                      f"vs {base['peak_rss_gib']:.2f} GiB on one rank")
            # Tensor parallelism: both ranks read the same batch of 4 (one data-parallel rank).
            r = scenario("125M, 2 ranks x 1 thread, tp 2", cfg,
                         src + ["num_threads=1", "batch_size=4", "tensor_parallel_dim=2",
                                "tensor_parallel_plan._component_=torchtune.models.llama3.base_llama_tp_plan"],
                         passive, a.repeats, two)
            print(f"scaling efficiency tp 2 (2 ranks x 1 thread vs 1 rank x 2 threads): "
                  f"{2 * r['tokens_per_s'] / base['tokens_per_s']:.2f}; rank 0 peak RSS {r['peak_rss_gib']:.2f} GiB "
                  f"vs {base['peak_rss_gib']:.2f} GiB on one rank")
    if a.only == "custom_sharded":
        custom_sharded(a.repeats)
    if a.only == "prefetch":
        fsdp_prefetch(a.repeats)


def fsdp_prefetch(pairs: int) -> None:
    """125M under FSDP, 2 ranks x 1 thread, with and without the next unit's all-gather started
    early, alternating (on, off) pairs; the median of the per-pair ratios."""
    data = pathlib.Path(tempfile.mkdtemp(prefix="fthost-bench-data-")) / "random_tokens.jsonl"
    random_token_data(data, samples=64, seq_len=256, vocab=32000)
    cfg = ROOT / "bench" / "configs" / "llama_125m.toml"
    common = [f"dataset.source={data}", "num_threads=1", "batch_size=2",
              "parallelism._component_=fthost.parallelism.fsdp"]
    passive = {"OMP_WAIT_POLICY": "PASSIVE"}
    ratios = []
    for _ in range(pairs):
        on = scenario("125M, fsdp 2 ranks x 1 thread, prefetch", cfg, common + ["parallelism.prefetch=true"], passive, 1,
                      ["--nproc-per-node", "2"])
        off = scenario("125M, fsdp 2 ranks x 1 thread, no prefetch", cfg, common + ["parallelism.prefetch=false"],
                       passive, 1, ["--nproc-per-node", "2"])
        ratios.append(on["tokens_per_s"] / off["tokens_per_s"])
        print(f"  pair ratio prefetch / none: {ratios[-1]:.3f}; peak gathered {on['peak_gathered_mib']:.0f} vs "
              f"{off['peak_gathered_mib']:.0f} MiB", flush=True)
    print(f"median of {pairs} pair ratios, prefetch / none: {statistics.median(ratios):.3f}")


def custom_sharded(repeats: int) -> None:
    """FSDP over 2 ranks with and without custom_sharded_layers = ["tok_embeddings", "output"]:
    rank 0's peak of gathered parameter bytes (exact) and its peak RSS (what the machine saw)."""
    cfg = ROOT / "bench" / "configs" / "llama_125m.toml"
    shapes = [  # (vocab, dim, layers, heads, kv heads, hidden)
        (32000, 768, 12, 12, 4, 2048),   # the 125M model
        (128256, 512, 4, 8, 4, 1536),    # Llama 3's vocabulary on a narrow model
        (128256, 1024, 4, 16, 8, 2816),
    ]
    for vocab, dim, layers, heads, kv, hidden in shapes:
        data = pathlib.Path(tempfile.mkdtemp(prefix="fthost-bench-data-")) / "random_tokens.jsonl"
        random_token_data(data, samples=16, seq_len=256, vocab=vocab)
        common = [f"dataset.source={data}", "num_threads=1", "batch_size=2", "max_steps_per_epoch=3",
                  f"model.vocab_size={vocab}", f"model.embed_dim={dim}", f"model.num_layers={layers}",
                  f"model.num_heads={heads}", f"model.num_kv_heads={kv}", f"model.intermediate_dim={hidden}",
                  "parallelism._component_=fthost.parallelism.fsdp"]
        results = {}
        for label, extra in (("root", []),
                             ("separate", ['parallelism.custom_sharded_layers=["tok_embeddings", "output"]'])):
            results[label] = scenario(f"vocab {vocab} x dim {dim}, {layers} layers, fsdp 2 ranks, {label}", cfg,
                                      common + extra, {"OMP_WAIT_POLICY": "PASSIVE"}, repeats,
                                      ["--nproc-per-node", "2"])
        a, b = results["root"], results["separate"]
        print(f"  rank 0 peak gathered {a['peak_gathered_mib']:.1f} -> {b['peak_gathered_mib']:.1f} MiB; "
              f"peak RSS {a['peak_rss_gib'] * 1024:.0f} -> {b['peak_rss_gib'] * 1024:.0f} MiB; "
              f"losses {a['last_loss']} vs {b['last_loss']}", flush=True)


if __name__ == "__main__":
    main()
