#!/usr/bin/env python3
"""Multi-node costs on simulated hosts (two network namespaces joined by veth links through a
bridge, as tests/multinode's test bed; needs root): Gloo's all-reduce and all-gather bandwidth
between two hosts against two ranks on loopback, and the 125M benchmark model's training speed on
2 hosts x 1 rank (FSDP, HSDP) against 1 host x 2 ranks. Medians; nothing here is a test.

  sudo python3 bench/multinode_bandwidth.py [--only collectives|steps] [--repeats N]

The collectives run through torch.distributed's Gloo backend from the project's .venv (the same
c10d ProcessGroupGloo fthost's ranks use); the training runs are fthost itself (build/bin/fthost,
or $FTHOST).
"""
import argparse
import json
import os
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
FTHOST = pathlib.Path(os.environ.get("FTHOST", ROOT / "build" / "bin" / "fthost"))
PYTHON = ROOT / ".venv" / "bin" / "python"
sys.path.insert(0, str(ROOT / "bench"))
from run import random_token_data  # noqa: E402

PREFIX = f"fthost-bench-{os.getpid()}-"

COLLECTIVE_WORKER = r"""
import os, statistics, sys, time, torch, torch.distributed as dist
rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo", rank=rank, world_size=size)
torch.set_num_threads(1)
for mib in (1, 16, 64):
    n = mib * 2**20 // 4
    x = torch.ones(n)
    shard = torch.ones(n // size)
    out = [torch.empty(n // size) for _ in range(size)]
    for op in ("all_reduce", "all_gather"):
        times = []
        for i in range(12):
            dist.barrier()
            t = time.perf_counter()
            if op == "all_reduce":
                dist.all_reduce(x)
            else:
                dist.all_gather(out, shard)
            times.append(time.perf_counter() - t)
        if rank == 0:
            t = statistics.median(times[2:])
            # Bus bandwidth: what each rank sent (ring algorithms), as nccl-tests count it.
            factor = 2 * (size - 1) / size if op == "all_reduce" else (size - 1) / size
            print(f"{op} {mib} {t:.6f} {mib / 1024 / t * factor:.3f}", flush=True)
dist.destroy_process_group()
"""


def sh(*args):
    subprocess.run(args, check=True, capture_output=True)


class Hosts:
    """Two simulated hosts, 10.213.0.1 and .2, on a bridge; removed at exit."""

    def __init__(self, count=2):
        self.switch = PREFIX + "switch"
        self.hosts = []
        sh("ip", "netns", "add", self.switch)
        sh("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", self.switch, "link", "set", "br0", "up")
        for h in range(count):
            ns = PREFIX + f"host{h}"
            sh("ip", "netns", "add", ns)
            self.hosts.append(ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh("ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", f"port{h}", "netns", self.switch)
            sh("ip", "-n", ns, "addr", "add", f"10.213.0.{h + 1}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", self.switch, "link", "set", f"port{h}", "master", "br0")
            sh("ip", "-n", self.switch, "link", "set", f"port{h}", "up")
        time.sleep(1)

    def close(self):
        for ns in self.hosts + [self.switch]:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for p in pids:
                try:
                    os.kill(int(p), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True)


def in_ns(ns, argv):
    return ["ip", "netns", "exec", ns, *argv] if ns else list(argv)


def collectives(hosts):
    results = {}
    for layout, namespaces, addr, iface in (("loopback, 1 host x 2 ranks", [None, None], "127.0.0.1", "lo"),
                                            ("veth, 2 hosts x 1 rank", hosts.hosts, "10.213.0.1", "eth0")):
        procs = []
        for rank, ns in enumerate(namespaces):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR=addr, MASTER_PORT="29511",
                       GLOO_SOCKET_IFNAME=iface, OMP_NUM_THREADS="1")
            procs.append(subprocess.Popen(in_ns(ns, [str(PYTHON), "-c", COLLECTIVE_WORKER]), env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        out, err = procs[0].communicate()
        procs[1].communicate()
        if procs[0].returncode != 0:
            sys.exit(f"collectives over {layout} failed:\n{err}")
        for line in out.splitlines():
            op, mib, t, gbps = line.split()
            results[(layout, op, int(mib))] = (float(t), float(gbps))
            print(f"{layout:28s} {op:10s} {int(mib):3d} MiB  {float(t) * 1e3:8.2f} ms  bus {float(gbps):6.2f} GiB/s",
                  flush=True)
    return results


def train(hosts, layout, strategy, data):
    """tokens/s per rank (median of the steps after the first) of one run."""
    out = pathlib.Path(tempfile.mkdtemp(prefix="fthost-bench-"))
    cfg = ROOT / "bench" / "configs" / "llama_125m.toml"
    common = ["--config", str(cfg), f"output_dir={out}", f"dataset.source={data}", "num_threads=1", "batch_size=2",
              "max_steps_per_epoch=4", "metric_logger._component_=torchtune.training.metric_logging.DiskLogger",
              f"metric_logger.log_dir={out}/logs", "metric_logger.filename=metrics.jsonl",
              "metric_logger.output_fmt=jsonl", "log_every_n_steps=1"]
    common += ["parallelism._component_=fthost.parallelism.fsdp"] if strategy == "fsdp" else [
        "parallelism._component_=fthost.parallelism.hsdp", "parallelism.data_parallel_replicate_dim=2"]
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    if layout == "1x2":
        procs = [subprocess.Popen([str(FTHOST), "--nproc-per-node", "2", *common], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)]
    else:
        procs = [subprocess.Popen(in_ns(ns, [str(FTHOST), "--nnodes", "2", "--node-rank", str(h), "--master-addr",
                                             "10.213.0.1", "--master-port", "29512", "--nproc-per-node", "1",
                                             *common]), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True) for h, ns in enumerate(hosts.hosts)]
    outputs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        sys.exit(f"fthost failed:\n" + "\n".join(outputs))
    rows = [json.loads(l) for l in (out / "logs" / "metrics.jsonl").read_text().splitlines() if l.strip()]
    shutil.rmtree(out, ignore_errors=True)
    return statistics.median(r["tokens_per_second_per_gpu"] for r in rows[1:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=["collectives", "steps"])
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    hosts = Hosts()
    try:
        if args.only in (None, "collectives"):
            collectives(hosts)
        if args.only in (None, "steps"):
            data = pathlib.Path(tempfile.mkdtemp(prefix="fthost-bench-data-")) / "random_tokens.jsonl"
            random_token_data(data, samples=64, seq_len=256, vocab=32000)
            for strategy in ("fsdp", "hsdp"):
                speeds = {}
                for layout in ("1x2", "2x1"):
                    speeds[layout] = statistics.median(train(hosts, layout, strategy, data)
                                                       for _ in range(args.repeats))
                    print(f"125M {strategy}, {'1 host x 2 ranks' if layout == '1x2' else '2 hosts x 1 rank'}: "
                          f"{speeds[layout]:.0f} tok/s per rank", flush=True)
                print(f"125M {strategy}: 2 hosts / 1 host = {speeds['2x1'] / speeds['1x2']:.3f}", flush=True)
            shutil.rmtree(data.parent, ignore_errors=True)
    finally:
        hosts.close()


if __name__ == "__main__":
    main()
