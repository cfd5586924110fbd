#!/usr/bin/env python3
"""What the preemption stop agreement costs per optimizer step. Not a test.

  python3 bench/preemption_agreement.py [--rounds 5]

The tiny demo (configs/tiny_demo.toml: ~0.9M parameters, so a step is a few milliseconds and
any per-step overhead shows) in three layouts, each with preemption_signals = [] (no agreement)
and with the default signals, interleaved pairs, --rounds rounds:

- 1 rank: the flag is read, nothing is exchanged;
- fsdp2: 2 ranks, FSDP; the flag is one more float64 in the step's own all-reduce;
- tp2:   2 ranks, tensor_parallel_dim = 2; the data-parallel all-reduce does not span every rank,
         so the flag takes one all-reduce of its own over the world.

Per layout: the median seconds per optimizer step (from each step's logged rate, after 10
warm-up steps) of each variant, and the median of the per-round ratios with / without. Run nothing else beside
it (`uptime` first).
"""
import argparse
import json
import pathlib
import re
import shutil
import statistics
import subprocess
import tempfile
import os

ROOT = pathlib.Path(__file__).resolve().parent.parent
FTHOST = ROOT / "build" / "bin" / "fthost"
CONFIG = ROOT / "configs" / "tiny_demo.toml"
LAYOUTS = {
    "1 rank": [],
    "fsdp2": ["--nproc-per-node", "2", "parallelism._component_=fthost.parallelism.fsdp"],
    "tp2": ["--nproc-per-node", "2", "tensor_parallel_dim=2",
            "tensor_parallel_plan._component_=torchtune.models.llama3.base_llama_tp_plan"],
}


def seconds_per_step(layout, signals):
    out = pathlib.Path(tempfile.mkdtemp(prefix="fthost-preemption-bench-"))
    try:
        args = [str(FTHOST), "--config", str(CONFIG), *LAYOUTS[layout], f"output_dir={out}", "epochs=2",
                "log_every_n_steps=1", "log_peak_memory_stats=false", f"preemption_signals={signals}",
                "metric_logger._component_=torchtune.training.metric_logging.DiskLogger",
                f"metric_logger.log_dir={out}/logs", "metric_logger.filename=metrics.jsonl",
                "metric_logger.output_fmt=jsonl"]
        env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
        proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{layout} {signals}: exit {proc.returncode}\n{(proc.stdout + proc.stderr)[-3000:]}")
        ranks = 2 if "--nproc-per-node" in LAYOUTS[layout] else 1
        steps = [json.loads(line) for line in (out / "logs" / "metrics.jsonl").read_text().splitlines()]
        # A step's seconds from its logged rate; the first 10 steps warm up.
        return statistics.median(
            s["num_tokens"] / (s["tokens_per_second_per_gpu"] * ranks) for s in steps[10:])
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    a = parser.parse_args()
    print(f"{'layout':8} {'without ms/step':>16} {'with ms/step':>13} {'ratio (median of rounds)':>26}")
    for layout in LAYOUTS:
        without, with_, ratios = [], [], []
        for r in range(a.rounds):
            # Alternate which goes first, so drift does not favour one.
            order = [("[]", without), ("[SIGTERM,SIGINT,SIGUSR1]", with_)]
            if r % 2:
                order.reverse()
            for signals, into in order:
                into.append(seconds_per_step(layout, signals))
            ratios.append(with_[-1] / without[-1])
        print(f"{layout:8} {statistics.median(without) * 1e3:16.3f} {statistics.median(with_) * 1e3:13.3f} "
              f"{statistics.median(ratios):26.3f}", flush=True)


if __name__ == "__main__":
    main()
