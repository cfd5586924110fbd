#!/usr/bin/env python3
"""fthost against the same model in plain PyTorch eager. Not a test: prints medians and ratios.

  python3 bench/compare_pytorch.py [--pairs 3] [--only 5m|100m] [--steps N] [--fthost-baseline BIN]

Each model (a Llama-3-architecture decoder, random init, random tokens, AdamW, fp32, 2 threads,
OMP_WAIT_POLICY=PASSIVE) is trained alternately by fthost (build/bin/fthost) and by the PyTorch
model below (the project's .venv PyTorch: the same LibTorch underneath), A B A B A B,
so both see the same machine state. --fthost-baseline adds a third side, another fthost build
(an earlier commit's build/bin/fthost), to the same alternation: A B C A B C. Printed per model: tokens/s medians (trained tokens, the
first steps dropped as warm-up), MFU = 6 N FLOPs per token / the fp32 GEMM peak measured in this
invocation, peak RSS, and the ratio fthost / PyTorch: of the two medians, and the median of the
per-pair ratios (each pair ran back to back, so its ratio is the one the machine's drift disturbs least).

N counts the parameters every token's forward multiplies through: all but the input embedding of
an untied model (a lookup, no FLOPs); a tied model's embedding is the output projection and counts.
"""
import argparse
import json
import math
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
FTHOST = ROOT / "build" / "bin" / "fthost"
SYSTEM_PYTHON = str(ROOT / ".venv" / "bin" / "python")  # the PyTorch whose LibTorch fthost is built on

MODELS = {
    # name: (vocab, dim, layers, heads, kv_heads, hidden, tied, batch, seq)
    "5m": (8192, 256, 4, 4, 2, 768, False, 8, 128),
    "100m": (32000, 768, 12, 12, 4, 2048, True, 4, 256),
}
THREADS = 2  # --threads changes it for every side (a loaded machine distorts two-thread runs most)
ROPE_BASE = 500000.0
NORM_EPS = 1e-5
LR = 1e-4


def thread_env() -> dict:
    return dict(os.environ, OMP_WAIT_POLICY="PASSIVE", OMP_NUM_THREADS=str(THREADS),
                OPENBLAS_NUM_THREADS=str(THREADS), MKL_NUM_THREADS=str(THREADS))


def random_token_data(path: pathlib.Path, samples: int, seq_len: int, vocab: int) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from run import random_token_data as write  # one writer for every bench

    write(path, samples, seq_len, vocab)


# --------------------------------------------------------------------------------------------
# The PyTorch side: runs in a child process (`--pytorch-worker`) so its peak RSS is its own.
# --------------------------------------------------------------------------------------------
def pytorch_worker(args) -> None:
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.set_num_threads(THREADS)
    torch.manual_seed(0)
    vocab, dim, layers, heads, kv_heads, hidden, tied, batch, seq = MODELS[args.model]
    head_dim = dim // heads

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + NORM_EPS) * self.scale

    def rope_tables(s):
        freqs = 1.0 / (ROPE_BASE ** (torch.arange(0, head_dim, 2).float() / head_dim))
        angles = torch.outer(torch.arange(s).float(), freqs)
        return angles.cos(), angles.sin()

    def apply_rope(x, cos, sin):  # x: [b, s, h, d], interleaved pairs as torchtune's RotaryPositionalEmbeddings
        x = x.reshape(*x.shape[:-1], -1, 2)
        x0, x1 = x[..., 0], x[..., 1]
        c, s_ = cos[None, :, None, :], sin[None, :, None, :]
        return torch.stack((x0 * c - x1 * s_, x1 * c + x0 * s_), -1).flatten(-2)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.sa_norm, self.mlp_norm = RMSNorm(), RMSNorm()
            self.q = nn.Linear(dim, heads * head_dim, bias=False)
            self.k = nn.Linear(dim, kv_heads * head_dim, bias=False)
            self.v = nn.Linear(dim, kv_heads * head_dim, bias=False)
            self.o = nn.Linear(heads * head_dim, dim, bias=False)
            self.w1 = nn.Linear(dim, hidden, bias=False)
            self.w3 = nn.Linear(dim, hidden, bias=False)
            self.w2 = nn.Linear(hidden, dim, bias=False)

        def forward(self, x, cos, sin, mask):
            b, s, _ = x.shape
            h = self.sa_norm(x)
            q = apply_rope(self.q(h).view(b, s, heads, head_dim), cos, sin).transpose(1, 2)
            k = apply_rope(self.k(h).view(b, s, kv_heads, head_dim), cos, sin).transpose(1, 2)
            v = self.v(h).view(b, s, kv_heads, head_dim).transpose(1, 2)
            k = k.repeat_interleave(heads // kv_heads, dim=1)
            v = v.repeat_interleave(heads // kv_heads, dim=1)
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(head_dim)
            attn = scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v
            x = x + self.o(attn.transpose(1, 2).reshape(b, s, dim))
            h = self.mlp_norm(x)
            return x + self.w2(F.silu(self.w1(h)) * self.w3(h))

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_embeddings = nn.Embedding(vocab, dim)
            self.layers = nn.ModuleList(Layer() for _ in range(layers))
            self.norm = RMSNorm()
            self.output = None if tied else nn.Linear(dim, vocab, bias=False)

        def forward(self, tokens):
            s = tokens.shape[1]
            cos, sin = rope_tables(s)
            mask = torch.ones(s, s, dtype=torch.bool).tril()
            x = self.tok_embeddings(tokens)
            for layer in self.layers:
                x = layer(x, cos, sin, mask)
            x = self.norm(x)
            return x @ self.tok_embeddings.weight.t() if tied else self.output(x)

    model = Decoder()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
    generator = torch.Generator().manual_seed(0)
    step_seconds = []
    profiler = None
    for step in range(args.steps):
        if args.profile and step == args.warmup:
            profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True)
            profiler.__enter__()
        tokens = torch.randint(0, vocab, (batch, seq), generator=generator)
        start = time.perf_counter()
        logits = model(tokens)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        loss.item()
        step_seconds.append(time.perf_counter() - start)
    if profiler:
        profiler.__exit__(None, None, None)
        print(profiler.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=40),
              file=sys.stderr)
    trained_tokens = batch * (seq - 1)
    steady = step_seconds[args.warmup:]
    print(json.dumps({
        "tokens_per_s": trained_tokens / statistics.median(steady),
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "params": sum(p.numel() for p in model.parameters()),
    }))


def gemm_peak_gflops(dtype: str = "float32") -> float:
    """GEMM FLOP/s of LibTorch's CPU BLAS (fp32 unless told: bench/compare_torchtune.py asks for
    bfloat16 too) with the bench's thread count: median of 5."""
    code = ("import torch,time,statistics\n"
            f"torch.set_num_threads({THREADS})\n"
            f"a=torch.randn(2048,2048,dtype=torch.{dtype});b=torch.randn(2048,2048,dtype=torch.{dtype});a@b\n"
            "t=[]\n"
            "for _ in range(5):\n"
            "  s=time.perf_counter();a@b;t.append(time.perf_counter()-s)\n"
            "print(2*2048**3/statistics.median(t)/1e9)\n")
    out = subprocess.run([SYSTEM_PYTHON, "-c", code], env=thread_env(), capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def run_pytorch(model: str, steps: int, warmup: int) -> dict:
    proc = subprocess.run([SYSTEM_PYTHON, __file__, "--pytorch-worker", "--model", model, "--steps", str(steps),
                           "--warmup", str(warmup), "--threads", str(THREADS)], env=thread_env(), capture_output=True,
                          text=True)
    if proc.returncode != 0:
        sys.exit(f"the PyTorch model failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_fthost(model: str, steps: int, warmup: int, data: pathlib.Path, binary: pathlib.Path = FTHOST) -> dict:
    vocab, dim, layers, heads, kv_heads, hidden, tied, batch, seq = MODELS[model]
    out = pathlib.Path(tempfile.mkdtemp(prefix="fthost-compare-"))
    args = [str(binary), "--config", str(ROOT / "bench" / "configs" / "llama_125m.toml"), f"output_dir={out}",
            f"dataset.source={data}", f"batch_size={batch}", f"max_steps_per_epoch={steps}",
            f"num_threads={THREADS}", f"optimizer.lr={LR}",
            f"model.vocab_size={vocab}", f"model.embed_dim={dim}", f"model.num_layers={layers}",
            f"model.num_heads={heads}", f"model.num_kv_heads={kv_heads}", f"model.intermediate_dim={hidden}",
            f"model.max_seq_len={seq}", f"model.tie_word_embeddings={'true' if tied else 'false'}",
            f"model.rope_base={ROPE_BASE}", f"model.norm_eps={NORM_EPS}",
            "metric_logger._component_=torchtune.training.metric_logging.DiskLogger",
            f"metric_logger.log_dir={out}/logs", "metric_logger.filename=metrics.jsonl",
            "metric_logger.output_fmt=jsonl", "log_every_n_steps=1", "log_peak_memory_stats=true"]
    proc = subprocess.run(args, env=thread_env(), cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{binary} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    rows = [json.loads(l) for l in (out / "logs" / "metrics.jsonl").read_text().splitlines() if l.strip()]
    steady = rows[warmup:] or rows
    return {
        "tokens_per_s": statistics.median(r["tokens_per_second_per_gpu"] for r in steady),
        "peak_rss_gib": max(r["peak_memory_rss"] for r in rows),
    }


def flops_params(model: str, total_params: int) -> int:
    vocab, dim, *_rest, tied, _b, _s = MODELS[model]
    return total_params if tied else total_params - vocab * dim


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--only", choices=sorted(MODELS))
    parser.add_argument("--steps", type=int, default=8, help="optimizer steps per run")
    parser.add_argument("--warmup", type=int, default=2, help="first steps of each run not measured")
    parser.add_argument("--threads", type=int, default=THREADS, help="threads of every side (default 2)")
    parser.add_argument("--fthost-baseline", type=pathlib.Path,
                        help="another fthost binary (e.g. an earlier build) to alternate with the other two")
    parser.add_argument("--pytorch-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true",
                        help="with --pytorch-worker: print torch.profiler's operator table of the measured steps")
    parser.add_argument("--model", choices=sorted(MODELS), help=argparse.SUPPRESS)
    a = parser.parse_args()
    globals()["THREADS"] = a.threads
    if a.pytorch_worker:
        pytorch_worker(a)
        return
    if not FTHOST.exists():
        sys.exit(f"{FTHOST} is missing: build first (bash scripts/build.sh)")
    if subprocess.run([SYSTEM_PYTHON, "-c", "import torch"], capture_output=True).returncode != 0:
        sys.exit("PyTorch is missing from .venv: bash scripts/setup.sh installs it")
    peak = gemm_peak_gflops()
    print(f"load average {os.getloadavg()[0]:.2f} at start; {os.cpu_count()} cores, {THREADS} threads, OMP_WAIT_POLICY=PASSIVE; {a.pairs} pairs A B per model, "
          f"{a.steps} steps per run ({a.warmup} warm-up); fp32 GEMM peak {peak:.1f} GFLOP/s (2048^3, median of 5)",
          flush=True)
    for model in [a.only] if a.only else sorted(MODELS, key=lambda m: MODELS[m][1]):
        vocab, _dim, _l, _h, _kv, _hid, _tied, batch, seq = MODELS[model]
        data = pathlib.Path(tempfile.mkdtemp(prefix="fthost-compare-data-")) / "random_tokens.jsonl"
        random_token_data(data, samples=batch * a.steps, seq_len=seq, vocab=vocab)
        ours, theirs, baseline = [], [], []
        params = 0
        for pair in range(a.pairs):
            ours.append(run_fthost(model, a.steps, a.warmup, data))
            if a.fthost_baseline:
                baseline.append(run_fthost(model, a.steps, a.warmup, data, a.fthost_baseline))
            theirs.append(run_pytorch(model, a.steps, a.warmup))
            params = theirs[-1]["params"]
            print(f"  {model} pair {pair + 1}: fthost {ours[-1]['tokens_per_s']:.0f} tok/s, "
                  + (f"baseline {baseline[-1]['tokens_per_s']:.0f} tok/s, " if baseline else "")
                  + f"PyTorch {theirs[-1]['tokens_per_s']:.0f} tok/s (load {os.getloadavg()[0]:.1f})", flush=True)
        flop_per_token = 6 * flops_params(model, params)
        sides = [("fthost", ours)] + ([("fthost baseline", baseline)] if baseline else []) + [("PyTorch eager", theirs)]
        for name, runs in sides:
            tps = statistics.median(r["tokens_per_s"] for r in runs)
            rss = statistics.median(r["peak_rss_gib"] for r in runs)
            print(f"{model:>5} {name:14s} {tps:9.0f} tok/s  MFU {tps * flop_per_token / (peak * 1e9):.2f}  "
                  f"peak RSS {rss:.2f} GiB", flush=True)
        ratio = statistics.median(r["tokens_per_s"] for r in ours) / statistics.median(
            r["tokens_per_s"] for r in theirs)
        print(f"{model:>5} ratio fthost / PyTorch: {ratio:.2f}  ({params / 1e6:.1f}M parameters, batch {batch} x {seq})",
              flush=True)
        # The two sides of a pair ran back to back, so their ratio cancels the machine's drift
        # between pairs, which the ratio of the two medians above keeps.
        pair_ratios = [o["tokens_per_s"] / t["tokens_per_s"] for o, t in zip(ours, theirs)]
        print(f"{model:>5} ratio fthost / PyTorch, median of the {len(pair_ratios)} pairs: "
              f"{statistics.median(pair_ratios):.2f}  (pairs: {', '.join(f'{r:.2f}' for r in pair_ratios)})",
              flush=True)
        if baseline:
            base_ratio = statistics.median(r["tokens_per_s"] for r in baseline) / statistics.median(
                r["tokens_per_s"] for r in theirs)
            print(f"{model:>5} ratio fthost baseline / PyTorch: {base_ratio:.2f}", flush=True)


if __name__ == "__main__":
    main()
