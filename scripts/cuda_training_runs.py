#!/usr/bin/env python3
"""Short fthost training runs on a CUDA device, for scripts/cuda_check.sh. Prints, per run, the
losses of the first and last steps, the median tokens/s (first step dropped) and the peak CUDA
memory; a run that fails prints its last lines and the next run goes on. Not a test: nothing is
asserted; the output is read and quoted in docs/performance.md.

  scripts/cuda_training_runs.py FTHOST REPORT_DIR [--quick]
"""
import json
import shutil
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
FTHOST = pathlib.Path(sys.argv[1]).resolve()
REPORT = pathlib.Path(sys.argv[2]).resolve()
sys.path.insert(0, str(ROOT / "bench"))
from run import random_token_data  # noqa: E402  (bench/run.py)


def run(name, config, overrides, launcher=()):
    # In memory: a 1B model's checkpoint at the end of the epoch would otherwise cost disk time.
    out = pathlib.Path(tempfile.mkdtemp(prefix="fthost-cuda-", dir="/dev/shm"))
    args = [str(FTHOST), *launcher, "--config", str(config), f"output_dir={out}",
            "metric_logger._component_=torchtune.training.metric_logging.DiskLogger",
            f"metric_logger.log_dir={out}/logs", "metric_logger.filename=metrics.jsonl",
            "metric_logger.output_fmt=jsonl", "log_every_n_steps=1", "log_peak_memory_stats=true"] + overrides
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    (REPORT / "runs").mkdir(exist_ok=True)
    (REPORT / "runs" / f"{name}.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        shutil.rmtree(out, ignore_errors=True)
        tail = "\n    ".join((proc.stdout + proc.stderr).strip().splitlines()[-6:])
        print(f"{name:28s} FAILED rc={proc.returncode} ({wall:.0f} s)\n    {tail}", flush=True)
        return None
    rows = [json.loads(l) for l in (out / "logs" / "metrics.jsonl").read_text().splitlines() if l.strip()]
    shutil.rmtree(out, ignore_errors=True)
    steady = rows[1:] or rows
    tps = statistics.median(r["tokens_per_second_per_gpu"] for r in steady)
    peak = max(r.get("peak_memory_active", r.get("peak_memory_rss", 0)) for r in rows)
    losses = [r["loss"] for r in rows]
    print(f"{name:28s} steps {len(rows):3d}  loss {losses[0]:.6f} -> {losses[-1]:.6f}  "
          f"{tps:10.0f} tok/s  peak {peak:7.2f} GiB  ({wall:.0f} s)", flush=True)
    return {"losses": losses, "tokens_per_s": tps, "peak_gib": peak}


def compare(a, b, label):
    if a and b:
        worst = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a["losses"], b["losses"]))
        print(f"    {label}: max relative loss difference {worst:.3e} over {len(a['losses'])} steps", flush=True)


demo = ROOT / "configs" / "tiny_demo.toml"
print("-- tiny demo (0.9M parameters)")
cpu = run("demo cpu fp32", demo, ["device=cpu", "epochs=1"])
gpu = run("demo cuda fp32", demo, ["device=cuda", "epochs=1"])
compare(gpu, cpu, "cuda vs cpu fp32")
base = run("demo cuda bf16", demo, ["device=cuda", "dtype=bf16", "epochs=1"])
for name, extra in [("demo cuda bf16 AC", ["enable_activation_checkpointing=true"]),
                    ("demo cuda bf16 AC+offload",
                     ["enable_activation_checkpointing=true", "enable_activation_offloading=true"]),
                    ("demo cuda bf16 opt-in-bwd", ["optimizer_in_bwd=true", "~clip_grad_norm"]),
                    ("demo cuda bf16 fsdp offload",
                     ["parallelism._component_=fthost.parallelism.fsdp", "parallelism.cpu_offload=true"])]:
    r = run(name, demo, ["device=cuda", "dtype=bf16", "epochs=1"] + extra)
    if "opt-in-bwd" not in name:
        compare(r, base, "vs demo cuda bf16")

if "--quick" in sys.argv:
    sys.exit(0)
print("-- Llama-3.2-1B shape (1.24B parameters), random init, batch 1 x 2048")
data = pathlib.Path(tempfile.mkdtemp()) / "tokens.jsonl"
random_token_data(data, 8, 2048, 128256)
big = ROOT / "bench" / "configs" / "llama_125m.toml"
common = ["~model", "model._component_=torchtune.models.llama3_2.llama3_2_1b", f"dataset.source={data}", "batch_size=1",
          "max_steps_per_epoch=4", "device=cuda", "num_threads=8"]
variants = [("", []), (" AC", ["enable_activation_checkpointing=true"]),
            (" AC+offload", ["enable_activation_checkpointing=true", "enable_activation_offloading=true"]),
            (" AC+opt-in-bwd", ["enable_activation_checkpointing=true", "optimizer_in_bwd=true"])]
results = {}
for dtype, chosen in [("bf16", variants), ("fp32", [variants[0], variants[3]])]:
    for name, extra in chosen:
        results[dtype + name] = run(f"1B {dtype}{name}", big, common + [f"dtype={dtype}"] + extra)
    base = results.get(dtype)
    for name, _ in chosen[1:]:
        other = results.get(dtype + name)
        if base and other:
            print(f"    1B {dtype}{name} vs none: step time x{base['tokens_per_s'] / other['tokens_per_s']:.2f}, "
                  f"peak {other['peak_gib']:.2f} vs {base['peak_gib']:.2f} GiB", flush=True)
