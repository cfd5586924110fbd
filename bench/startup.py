#!/usr/bin/env python3
"""Benchmarks fthost's start-up: the median wall time of the commands that do not train.

  python3 bench/startup.py [--fthost build/bin/fthost] [--runs 10]

Each command runs --runs times in a row (the first run is not dropped: a user's first call
pays the same page-cache misses as any other, once the build is warm). Not a test: it prints
medians and asserts nothing.
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent

COMMANDS = [
    ["--version"],
    ["--help"],
    ["ls"],
    ["plugins"],
    ["validate", "--config", str(ROOT / "configs" / "tiny_demo.toml")],
]


def median_wall_s(fthost: str, args: list, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run([fthost, *args], cwd=ROOT, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            sys.exit(f"fthost {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fthost", default=str(ROOT / "build" / "bin" / "fthost"))
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    if not os.access(args.fthost, os.X_OK):
        sys.exit(f"{args.fthost}: not an executable; build first (bash scripts/build.sh)")
    print(f"{'command':<40} median of {args.runs} (s)")
    for command in COMMANDS:
        shown = " ".join(c if not c.startswith("/") else pathlib.Path(c).name for c in command)
        print(f"fthost {shown:<33} {median_wall_s(args.fthost, command, args.runs):.3f}")


if __name__ == "__main__":
    main()
