#!/usr/bin/env python3
"""The fthost executable's allocator: jemalloc (what it links) against glibc's. Not a test.

  python3 bench/allocator.py --glibc-binary PATH [--repeats 3]

PATH is an fthost built with -DFTHOST_JEMALLOC=OFF (its own build directory; or build/bin/fthost
linked again without libjemalloc, next to it so it finds lib/). Each layout of a 36M-parameter
Llama-3-shaped model trains 6 steps with each binary, alternating, `repeats` times: tokens/s per
rank (median over steps 2-6), the peak resident set and the memory plan's ratio (measured / planned,
logged after step 2). Prints medians and the jemalloc / glibc ratios.
"""
import argparse
import pathlib
import re
import statistics
import subprocess
import tempfile

from run import random_token_data  # bench/run.py, beside this file

ROOT = pathlib.Path(__file__).resolve().parent.parent
JEMALLOC = ROOT / "build" / "bin" / "fthost"
CONFIG = ROOT / "bench" / "configs" / "llama_36m.toml"

LAYOUTS = {
    "1 rank fp32": [],
    "1 rank, activation checkpointing": ["enable_activation_checkpointing=true"],
    "FSDP 2 ranks": ["--nproc-per-node", "2"],
}


def run(binary, layout, work):
    out = subprocess.run([str(binary), *layout, "--config", str(CONFIG), "max_steps_per_epoch=6",
                          "log_peak_memory_stats=true", f"dataset.source={work / 'data.jsonl'}",
                          f"output_dir={work / 'out'}"],
                         capture_output=True, text=True, check=True).stdout
    rates = [float(x) for x in re.findall(r"tokens_per_second_per_gpu:([0-9.]+)", out)][1:]
    rss = max(float(x) for x in re.findall(r"peak_memory_rss:([0-9.]+)", out))
    ratio = re.search(r"after step 2: ([0-9.]+)x the plan", out)
    return statistics.median(rates), rss, float(ratio.group(1)) if ratio else float("nan")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--glibc-binary", required=True, type=pathlib.Path)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        random_token_data(work / "data.jsonl", samples=64, seq_len=512, vocab=16384)
        print(f"{'layout':36} {'allocator':9} {'tokens/s':>9} {'peak RSS GiB':>13} {'measured/plan':>14}")
        for name, layout in LAYOUTS.items():
            results = {"jemalloc": [], "glibc": []}
            for _ in range(args.repeats):
                for allocator, binary in (("jemalloc", JEMALLOC), ("glibc", args.glibc_binary)):
                    results[allocator].append(run(binary, layout, work))
            medians = {a: [statistics.median(r[i] for r in rs) for i in range(3)] for a, rs in results.items()}
            for allocator, (rate, rss, ratio) in medians.items():
                print(f"{name:36} {allocator:9} {rate:9.0f} {rss:13.3f} {ratio:13.2f}x")
            j, g = medians["jemalloc"], medians["glibc"]
            print(f"{name:36} {'ratio':9} {j[0] / g[0]:8.2f}x {j[1] / g[1]:12.2f}x")


if __name__ == "__main__":
    main()
