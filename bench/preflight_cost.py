#!/usr/bin/env python3
"""What the pre-flight check costs a good run and saves a bad one (docs/preflight.md). Not a test.

  .venv/bin/python bench/preflight_cost.py [--rounds 7]

1. A good run: `fthost --config configs/tiny_demo.toml` for one step, with the check and without
   it (FTHOST_LAUNCHER=1 makes the process skip it, as the ranks the launcher started do), in
   interleaved pairs; the median of the per-round ratios and each side's median wall time.
2. A bad run: a copy of the shipped qwen3/0.6B_full config whose model, tokenizer and Hub dataset
   are not on this machine, with the check (it fails before anything is built) and without it
   (it fails on the first missing thing it reaches, after loading LibTorch and building the
   model): wall time, peak RSS and how many problems the message names.
Run nothing else beside it (`uptime` first).
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
FTHOST = ROOT / "build" / "bin" / "fthost"


def run(args, env_extra, cwd):
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    env.pop("FTHOST_LAUNCHER", None)
    env.update(env_extra)
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([str(FTHOST)] + args, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        out.seek(0)
        text = out.read().decode(errors="replace")
    return seconds, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), text


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    a = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fthost-preflight-bench-") as tmp:
        good = ["--config", "configs/tiny_demo.toml", "epochs=1", "max_steps_per_epoch=1", f"output_dir={tmp}/out"]
        with_check, without_check, ratios = [], [], []
        for r in range(a.rounds):
            order = [True, False] if r % 2 == 0 else [False, True]
            times = {}
            for checked in order:
                seconds, _, code, text = run(good, {} if checked else {"FTHOST_LAUNCHER": "1"}, ROOT)
                if code != 0:
                    raise SystemExit(text[-2000:])
                times[checked] = seconds
            with_check.append(times[True])
            without_check.append(times[False])
            ratios.append(times[True] / times[False])
        print(f"good run (tiny_demo, 1 step), {a.rounds} interleaved pairs: with the check "
              f"{statistics.median(with_check):.3f} s, without {statistics.median(without_check):.3f} s, "
              f"ratio {statistics.median(ratios):.3f} (median of the rounds)")

        bad = pathlib.Path(tmp) / "my.yaml"
        subprocess.run([str(FTHOST), "cp", "qwen3/0.6B_full", str(bad)], check=True, stdout=subprocess.DEVNULL)
        hub = pathlib.Path(tmp) / "empty_hub"
        hub.mkdir()
        for checked in (True, False):
            env = {"HF_HUB_CACHE": str(hub)} if checked else {"HF_HUB_CACHE": str(hub), "FTHOST_LAUNCHER": "1"}
            seconds, peak_mib, code, text = run(["--config", str(bad), f"output_dir={tmp}/bad"], env, ROOT)
            error = text[text.find("error:"):]
            named = sum(1 for part in ("no such file: /tmp/Qwen3-0.6B/vocab.json",
                                       "no such file: /tmp/Qwen3-0.6B/merges.txt", "/tmp/Qwen3-0.6B",
                                       "yahma/alpaca-cleaned") if part in error)
            print(f"bad run, {'with' if checked else 'without'} the check: exit {code} after {seconds:.2f} s, "
                  f"peak RSS {peak_mib:.0f} MiB, {named} of the 4 missing inputs named: {error.splitlines()[0][:150]}")


if __name__ == "__main__":
    main()
