#!/usr/bin/env python3
"""Reading a dataset from JSON Lines against the same records as Parquet, each held in memory and
streamed (`streaming = true`: read when drawn), and the data loader's worker threads
(`num_workers`) on each: the time and peak RSS of `fthost data --samples 0` (the data loader
alone: read every record, tokenize and collate every sample with the Llama 3 tokenizer, print
the statistics) on an Alpaca-shaped corpus. Not a test.

  .venv/bin/python bench/data_sources.py [--records 200000] [--rounds 3] [--workers 0,1,2]

The corpus is the shared fixture's 100 Alpaca records repeated with a counter appended to each
instruction, written once as .jsonl (datasets' to_json layout) and once as .parquet (pyarrow,
row groups of 64K rows; the repeated text compresses far better than real data would).
Interleaved rounds; medians. Run nothing else beside it (`uptime` first).
"""
import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = pathlib.Path(__file__).resolve().parent.parent
FTHOST = ROOT / "build" / "bin" / "fthost"
FIXTURES = pathlib.Path(os.environ.get("FT_FIXTURES") or ROOT.parent / "shared" / "fixtures")


def corpus(records, out):
    base = json.loads((FIXTURES / "data" / "alpaca_tiny.json").read_text())
    rows = []
    for i in range(records):
        r = dict(base[i % len(base)])
        r["instruction"] = f"{r['instruction']} ({i})"
        rows.append(r)
    jsonl = out / "corpus.jsonl"
    with open(jsonl, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    parquet = out / "corpus.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet, row_group_size=65536)
    return {"jsonl": jsonl, "parquet": parquet}


def run(source, streaming, workers, out):
    args = [str(FTHOST), "data", "--samples", "0", "--config", str(ROOT / "configs" / "tiny_alpaca_llama3.toml"),
            f"tokenizer.path={FIXTURES / 'tokenizers' / 'llama3' / 'tokenizer.json'}", f"dataset.source={source}",
            f"dataset.streaming={'true' if streaming else 'false'}", f"num_workers={workers}"]
    log = out / "run.log"
    start = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.Popen(args, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT,
                                env=dict(os.environ, OMP_WAIT_POLICY="PASSIVE"))
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak RSS
    seconds = time.perf_counter() - start
    text = log.read_text()
    if status != 0:
        raise SystemExit(f"{source}: status {status}\n{text[-2000:]}")
    tokens = int(re.search(r"\((\d+) in all\)", text).group(1))  # "tokens per sample ... (N in all)"
    return seconds, usage.ru_maxrss / 2**20, tokens  # KiB -> GiB


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", default="0,1,2", help="num_workers values, comma-separated")
    parser.add_argument("--write-corpus", help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.write_corpus:
        corpus(a.records, pathlib.Path(a.write_corpus))
        return
    with tempfile.TemporaryDirectory(prefix="fthost-data-bench-") as tmp:
        # Written by another process: a child's peak RSS counts the parent's pages it was forked
        # with, so this process must not hold the corpus.
        subprocess.run([sys.executable, __file__, "--records", str(a.records), "--write-corpus", tmp], check=True)
        files = {"jsonl": pathlib.Path(tmp) / "corpus.jsonl", "parquet": pathlib.Path(tmp) / "corpus.parquet"}
        sizes = {k: v.stat().st_size / 2**20 for k, v in files.items()}
        workers = [int(w) for w in a.workers.split(",")]
        variants = [(kind, streaming, w) for kind in files for streaming in (False, True) for w in workers]
        times = {v: [] for v in variants}
        peaks = {v: [] for v in variants}
        for r in range(a.rounds):
            for v in (variants if r % 2 == 0 else list(reversed(variants))):
                seconds, peak, tokens = run(files[v[0]], v[1], v[2], pathlib.Path(tmp))
                times[v].append(seconds)
                peaks[v].append(peak)
        base_seconds, base_peak, _ = run(FIXTURES / "data" / "alpaca_tiny.json", False, 0, pathlib.Path(tmp))
        print(f"{a.records} records, {a.rounds} interleaved rounds (medians); the 100-record fixture peaks at "
              f"{base_peak:.2f} GiB")
        print(f"{'source':8} {'streaming':>9} {'workers':>7} {'file MiB':>9} {'seconds':>8} {'samples/s':>10} {'tokens/s':>10} "
              f"{'vs 0 workers':>12} {'peak RSS GiB':>13}")
        for v in variants:
            t = statistics.median(times[v])
            # Per round, then the median: the pairs ran side by side, so drift cancels.
            ratio = statistics.median(z / t1 for z, t1 in zip(times[(v[0], v[1], workers[0])], times[v]))
            print(f"{v[0]:8} {str(v[1]):>9} {v[2]:7} {sizes[v[0]]:9.1f} {t:8.2f} {a.records / t:10.0f} {tokens / t:10.0f} "
                  f"{ratio:12.2f} {statistics.median(peaks[v]):13.2f}")


if __name__ == "__main__":
    main()
