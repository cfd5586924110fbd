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
import json
import pathlib
import random
import re
import statistics
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
JEMALLOC = ROOT / "build" / "bin" / "fthost"

CONFIG = """seed = 0
epochs = 1
max_steps_per_epoch = 6
batch_size = 2
dtype = "fp32"
device = "cpu"
log_peak_memory_stats = true

[model]
_component_ = "torchtune.models.llama3.llama3"
vocab_size = 16384
num_layers = 6
num_heads = 8
num_kv_heads = 4
embed_dim = 512
intermediate_dim = 1536
max_seq_len = 512

[checkpointer]
_component_ = "torchtune.training.FullModelHFCheckpointer"
checkpoint_dir = ""
model_type = "LLAMA3"
output_dir = "${output_dir}"

[dataset]
_component_ = "fthost.datasets.tokenized_jsonl"

[loss]
_component_ = "torchtune.modules.loss.CEWithChunkedOutputLoss"

[optimizer]
_component_ = "torch.optim.AdamW"
lr = 1e-4

[metric_logger]
_component_ = "torchtune.training.metric_logging.StdoutLogger"
"""

LAYOUTS = {
    "1 rank fp32": [],
    "1 rank, activation checkpointing": ["enable_activation_checkpointing=true"],
    "FSDP 2 ranks": ["--nproc-per-node", "2"],
}


def run(binary, layout, work):
    out = subprocess.run([str(binary), *layout, "--config", str(work / "run.toml"),
                          f"dataset.source={work / 'data.jsonl'}", f"output_dir={work / 'out'}"],
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
        (work / "run.toml").write_text(CONFIG)
        rng = random.Random(0)
        with (work / "data.jsonl").open("w") as f:
            for _ in range(64):
                ids = [rng.randrange(4, 16000) for _ in range(512)]
                f.write(json.dumps({"tokens": ids, "labels": ids}) + "\n")
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
