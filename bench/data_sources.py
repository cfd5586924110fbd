#!/usr/bin/env python3
"""Reading a dataset from JSON Lines against the same records as Parquet: the time and peak RSS
of `fthost data --samples 0` (read every record, tokenize and collate every sample with the
Llama 3 tokenizer, print the statistics) on an Alpaca-shaped corpus. Not a test.

  .venv/bin/python bench/data_sources.py [--records 200000] [--rounds 3]

The corpus is the shared fixture's 100 Alpaca records repeated with a counter appended to each
instruction, written once as .jsonl (datasets' to_json layout) and once as .parquet (pyarrow,
row groups of 64K rows). Interleaved rounds; medians. The records are held in memory as parsed
JSON either way (no streaming yet), so peak RSS grows with the corpus. Run nothing else beside
it (`uptime` first).
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
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


def run(source, out):
    args = [str(FTHOST), "data", "--samples", "0", "--config", str(ROOT / "configs" / "tiny_alpaca_llama3.toml"),
            f"tokenizer.path={FIXTURES / 'tokenizers' / 'llama3' / 'tokenizer.json'}", f"dataset.source={source}"]
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
    return seconds, usage.ru_maxrss / 2**20  # KiB -> GiB


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200000)
    parser.add_argument("--rounds", type=int, default=3)
    a = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fthost-data-bench-") as tmp:
        files = corpus(a.records, pathlib.Path(tmp))
        sizes = {k: v.stat().st_size / 2**20 for k, v in files.items()}
        times = {k: [] for k in files}
        peaks = {k: [] for k in files}
        for r in range(a.rounds):
            for kind in (list(files) if r % 2 == 0 else list(reversed(list(files)))):
                seconds, peak = run(files[kind], pathlib.Path(tmp))
                times[kind].append(seconds)
                peaks[kind].append(peak)
        print(f"{a.records} records, {a.rounds} interleaved rounds (medians)")
        print(f"{'source':8} {'file MiB':>9} {'seconds':>8} {'samples/s':>10} {'peak RSS GiB':>13}")
        for kind in files:
            t = statistics.median(times[kind])
            print(f"{kind:8} {sizes[kind]:9.1f} {t:8.2f} {a.records / t:10.0f} {statistics.median(peaks[kind]):13.2f}")
        print(f"parquet / jsonl: time {statistics.median(times['parquet']) / statistics.median(times['jsonl']):.3f}, "
              f"peak RSS {statistics.median(peaks['parquet']) / statistics.median(peaks['jsonl']):.3f}")


if __name__ == "__main__":
    main()
