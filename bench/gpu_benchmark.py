#!/usr/bin/env python3
"""GPU benchmark (not a test): the Llama-3.2-1B shape in bfloat16, sequence 2048, the largest
batch that fits, on one CUDA device. Prints tokens/s (median over steps, the first two dropped),
MFU and the CUDA allocator's peak, and writes them to REPORT/gpu_benchmark.json.

  python3 bench/gpu_benchmark.py --fthost build-gpu/bin/fthost --report DIR [--steps 8]

MFU counts FLOPs as torchtitan does: 6 x the non-embedding parameters, plus 12 x layers x heads x
head_dim x sequence for attention, per token; the peak is the H200's dense bfloat16 989 TFLOP/s
(--peak-tflops for another device).
"""
import argparse
import json
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from run import random_token_data  # noqa: E402

# torchtune.models.llama3_2.llama3_2_1b
VOCAB, DIM, LAYERS, HEADS, KV_HEADS, HIDDEN = 128256, 2048, 16, 32, 8, 8192
HEAD_DIM = DIM // HEADS


def flops_per_token(seq: int) -> float:
    attention = DIM * (HEADS * HEAD_DIM) * 2 + DIM * (KV_HEADS * HEAD_DIM) * 2
    mlp = 3 * DIM * HIDDEN
    non_embedding = LAYERS * (attention + mlp + 2 * DIM) + DIM
    return 6 * non_embedding + 12 * LAYERS * HEADS * HEAD_DIM * seq


def run_fthost(fthost: pathlib.Path, data: pathlib.Path, batch: int, steps: int, extra: list) -> dict:
    out = pathlib.Path(tempfile.mkdtemp(prefix="fthost-gpu-bench-"))
    args = [str(fthost), "--config", str(ROOT / "bench" / "configs" / "llama_125m.toml"), f"output_dir={out}",
            "~model", "model._component_=torchtune.models.llama3_2.llama3_2_1b", f"dataset.source={data}",
            f"batch_size={batch}", f"max_steps_per_epoch={steps}", "epochs=1", "device=cuda", "dtype=bf16",
            "num_threads=8",
            "metric_logger._component_=torchtune.training.metric_logging.DiskLogger",
            f"metric_logger.log_dir={out}/logs", "metric_logger.filename=metrics.jsonl",
            "metric_logger.output_fmt=jsonl", "log_every_n_steps=1", "log_peak_memory_stats=true"] + extra
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    try:
        if proc.returncode != 0:
            return {"ok": False, "batch": batch, "wall_s": wall,
                    "tail": "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-4:])}
        rows = [json.loads(l) for l in (out / "logs" / "metrics.jsonl").read_text().splitlines() if l.strip()]
        steady = rows[2:] or rows
        return {"ok": True, "batch": batch, "wall_s": wall,
                "tokens_per_s": statistics.median(r["tokens_per_second_per_gpu"] for r in steady),
                "peak_active_gib": max(r.get("peak_memory_active", 0) for r in rows),
                "peak_reserved_gib": max(r.get("peak_memory_reserved", 0) for r in rows),
                "losses": [r["loss"] for r in rows]}
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fthost", required=True, type=pathlib.Path)
    ap.add_argument("--report", required=True, type=pathlib.Path)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--batches", default="16,8,4,2,1", help="tried largest first; the first that fits is measured")
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    args = ap.parse_args()
    data = pathlib.Path(tempfile.mkdtemp()) / "tokens.jsonl"
    batches = [int(b) for b in args.batches.split(",")]
    random_token_data(data, max(batches) * args.steps, args.seq, VOCAB)
    results = {"shape": "llama3_2_1b", "dtype": "bf16", "seq": args.seq, "flops_per_token": flops_per_token(args.seq),
               "peak_tflops": args.peak_tflops, "runs": []}
    for variant, extra in [("fthost", []), ("fthost fused AdamW", ["optimizer.fused=true"])]:
        for batch in batches:
            r = run_fthost(args.fthost, data, batch, args.steps, extra)
            r["variant"] = variant
            results["runs"].append(r)
            if not r["ok"]:
                print(f"{variant:22s} batch {batch:3d}: does not run ({r['wall_s']:.0f} s)\n    {r['tail']}", flush=True)
                continue
            mfu = r["tokens_per_s"] * results["flops_per_token"] / (args.peak_tflops * 1e12)
            r["mfu"] = mfu
            print(f"{variant:22s} batch {batch:3d}: {r['tokens_per_s']:9.0f} tokens/s  MFU {mfu:.3f}  "
                  f"peak {r['peak_active_gib']:.1f} GiB active / {r['peak_reserved_gib']:.1f} reserved  "
                  f"loss {r['losses'][0]:.3f} -> {r['losses'][-1]:.3f}  ({r['wall_s']:.0f} s)", flush=True)
            break
    try:
        import torchtune  # noqa: F401
        print("torchtune is installed; its side of the comparison is bench/compare_torchtune.py's GPU layout "
              "(not part of this check yet)")
    except ImportError:
        print("torchtune is not installed here: fthost's figures only")
    args.report.mkdir(parents=True, exist_ok=True)
    (args.report / "gpu_benchmark.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
