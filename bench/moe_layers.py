#!/usr/bin/env python3
"""Mixture-of-experts training throughput on this CPU: fthost against Hugging Face transformers'
Qwen3MoeForCausalLM and torchtune's MoE layer. Not a test: prints medians and ratios.

  python3 bench/moe_layers.py [--repeats 3] [--layers 2] [--experts 32] [--seq-len 512]
      [--steps 6] [--threads 2] [--smoke] [--torchtune-src DIR] [--only fthost,transformers,torchtune]
      [--expert-parallel]

The model: Qwen3-30B-A3B's layer shape (hidden 2048, 32 query heads and 4 key/value heads of
128, experts of width 768, 8 experts per token with the top-k weights renormalised, every layer
sparse, no shared expert) at reduced depth (--layers) and expert count (--experts; the published
model has 128: 32 keeps fp32 parameters, gradients and AdamW's two moments of 2 layers near
8 GB), with a 32000-token vocabulary instead of 151936 so that the embedding and the output
projection do not dominate a 2-layer model and the step's time is about the layers. Its random
weights (transformers' own initialisation, seed 0) are written once into a temporary
directory by transformers (`Qwen3MoeForCausalLM(config)`, `save_pretrained(safe_serialization=True)`,
float32) together with random token sequences (batch 1, --seq-len tokens, labels = tokens).

Three implementations, run in turn within one invocation (A B C A B C ...), so all see the same
machine state, each in a fresh process, single process, float32, AdamW (lr 1e-5, betas 0.9 /
0.999, eps 1e-8, weight decay 0.01), no clipping, no LR schedule, --steps optimizer steps of one
sample on the same data, the same thread count (OMP_NUM_THREADS, OMP_WAIT_POLICY=PASSIVE,
torch.set_num_threads / fthost's num_threads):

- fthost: build/bin/fthost, model `fthost.models.from_hf_config` on the directory,
  `FullModelHFCheckpointer` with model_type QWEN3_MOE, `fthost.datasets.tokenized_jsonl`,
  torchtune's `CEWithChunkedOutputLoss`. It logs `tokens_per_second_per_gpu` per step
  (targets after the label shift, seq - 1, over the step's wall time) and `peak_memory_rss`.
- transformers: `Qwen3MoeForCausalLM.from_pretrained` of the same directory, `model(input_ids,
  labels=labels)` (its own shifted mean cross-entropy), backward, `torch.optim.AdamW` step,
  zero_grad, loss.item(); same weights and data as fthost, so the first losses agree.
- torchtune: a decoder of the same shapes built from torchtune's modules (TransformerDecoder,
  MultiHeadAttention with q/k RMSNorm and RoPE base 1e6, and as each layer's MLP
  `torchtune.modules.moe.MoE` with `GroupedExperts` and `TokenChoiceTopKRouter`, the Llama 4 MoE
  layer, configured with the same expert count, width and top-k, no shared expert), the
  recipe's shifted labels and `CEWithChunkedOutputLoss`, its own random weights (std 0.02).
  Its router is Llama 4's: sigmoid scores, top-k without renormalisation, the scores multiplied
  into the expert's input rather than its output; on a CPU (no SM90 GPU) GroupedExperts loops over
  the experts. torchtune 0.6.1 (the version in .venv) has no `torchtune.modules.moe` (it came
  with Llama 4 support after 0.6.1): the column then says so and is skipped. --torchtune-src DIR
  (os.pathsep-separated) puts a newer torchtune source tree first on PYTHONPATH for this column.
  torchtune's main branch (April 2026) needs more than that on a CPU: it imports NF4 names from
  a newer torchao and torchvision, and its TokenChoiceTopKRouter counts the tokens per expert
  with torch.histc of the int64 expert indices, which PyTorch implements on CUDA only
  ('"histogram_cpu" not implemented for 'Long''): as published, its MoE layer does not run on a
  CPU.

--expert-parallel runs fthost alone on 2 ranks instead (launched with --nproc-per-node 2, FSDP,
the --threads shared between the ranks, one sample per rank and step): every expert on each rank
(`fthost-2ranks`) against `expert_parallel_dim = 2` (`fthost-2ranks-ep2`: each rank holds half of
every layer's experts and the tokens reach them by all-to-all over Gloo), interleaved, with the
ratio of their tokens/s per rank and of rank 0's peak RSS. Their first losses agree (same weights,
same data).

For the Python columns tokens/s is measured as fthost logs it: the step's targets (seq - 1)
over the wall time from taking the sample to the loss read back after the optimizer step;
per run the median over the steps after the first (warm-up); printed is the median over
--repeats runs. Peak RSS: fthost's logged `peak_memory_rss`; for Python
`resource.getrusage(RUSAGE_SELF).ru_maxrss` at the end of the run (model load included).
"""
import argparse
import importlib.util
import json
import os
import pathlib
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
FTHOST = ROOT / "build" / "bin" / "fthost"
SYSTEM_PYTHON = str(ROOT / ".venv" / "bin" / "python")  # torch, transformers and torchtune 0.6.1
IMPLS = ["fthost", "transformers", "torchtune", "fthost-2ranks", "fthost-2ranks-ep2"]
DEFAULT_IMPLS = IMPLS[:3]
# Two ranks on this machine: FSDP with every expert on each rank against expert_parallel_dim = 2.
TWO_RANK_RUNS = {"fthost-2ranks": [], "fthost-2ranks-ep2": ["expert_parallel_dim=2"]}
LR, BETAS, EPS, WEIGHT_DECAY = 1e-5, (0.9, 0.999), 1e-8, 0.01
ROPE_THETA, NORM_EPS, INIT_STD = 1e6, 1e-6, 0.02
RUN_TIMEOUT_S = 3 * 3600


def shape(a) -> dict:
    if a.smoke:
        return {"hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 16, "moe_hidden": 32, "experts": 4, "top_k": 2,
                "layers": 2, "vocab": 512, "seq": 32}
    return {"hidden": 2048, "heads": 32, "kv_heads": 4, "head_dim": 128, "moe_hidden": 768, "experts": a.experts,
            "top_k": min(8, a.experts), "layers": a.layers, "vocab": 32000, "seq": a.seq_len}


def thread_env(threads: int, extra_pythonpath: str = "") -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_WAIT_POLICY="PASSIVE", MKL_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1",
               TRANSFORMERS_VERBOSITY="error")
    if extra_pythonpath:
        env["PYTHONPATH"] = extra_pythonpath + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


# --------------------------------------------------------------------------------------------
# Workers (each in its own process, under .venv's python)
# --------------------------------------------------------------------------------------------
def worker_make_model(s: dict, model_dir: pathlib.Path, data: pathlib.Path, samples: int) -> None:
    import torch
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM
    config = Qwen3MoeConfig(
        vocab_size=s["vocab"], hidden_size=s["hidden"], intermediate_size=3 * s["hidden"],
        num_hidden_layers=s["layers"], num_attention_heads=s["heads"], num_key_value_heads=s["kv_heads"],
        head_dim=s["head_dim"], moe_intermediate_size=s["moe_hidden"], num_experts=s["experts"],
        num_experts_per_tok=s["top_k"], norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
        max_position_embeddings=max(s["seq"], 4096), rope_theta=ROPE_THETA, rms_norm_eps=NORM_EPS,
        tie_word_embeddings=False, initializer_range=INIT_STD, output_router_logits=False,
        attention_bias=False, use_sliding_window=False, torch_dtype="float32")
    torch.manual_seed(0)
    model = Qwen3MoeForCausalLM(config).to(torch.float32)
    model.save_pretrained(model_dir, safe_serialization=True, max_shard_size="200GB")
    params = sum(p.numel() for p in model.parameters())
    expert = 3 * s["hidden"] * s["moe_hidden"]
    # Parameters one token's forward multiplies through: all but the embedding and the experts it skips.
    active = params - s["vocab"] * s["hidden"] - s["layers"] * (s["experts"] - s["top_k"]) * expert
    rng = random.Random(0)
    with data.open("w") as f:
        for _ in range(samples):
            tokens = [rng.randrange(s["vocab"]) for _ in range(s["seq"])]
            f.write(json.dumps({"tokens": tokens, "labels": tokens}) + "\n")
    print(json.dumps({"params": params, "active": active, "experts_params": s["layers"] * s["experts"] * expert}))


def torchtune_decoder(s: dict):
    import torch
    from torch import nn
    from torchtune.modules import (MultiHeadAttention, RMSNorm, RotaryPositionalEmbeddings, TransformerDecoder,
                                   TransformerSelfAttentionLayer)
    from torchtune.modules.moe import GroupedExperts, MoE, TokenChoiceTopKRouter
    dim, hd = s["hidden"], s["head_dim"]
    rope = RotaryPositionalEmbeddings(dim=hd, max_seq_len=s["seq"], base=ROPE_THETA)
    layers = []
    for _ in range(s["layers"]):
        attention = MultiHeadAttention(
            embed_dim=dim, num_heads=s["heads"], num_kv_heads=s["kv_heads"], head_dim=hd,
            q_proj=nn.Linear(dim, s["heads"] * hd, bias=False), k_proj=nn.Linear(dim, s["kv_heads"] * hd, bias=False),
            v_proj=nn.Linear(dim, s["kv_heads"] * hd, bias=False), output_proj=nn.Linear(s["heads"] * hd, dim, bias=False),
            pos_embeddings=rope, q_norm=RMSNorm(hd, eps=NORM_EPS), k_norm=RMSNorm(hd, eps=NORM_EPS),
            max_seq_len=s["seq"])
        moe = MoE(experts=GroupedExperts(dim=dim, hidden_dim=s["moe_hidden"], num_experts=s["experts"]),
                  router=TokenChoiceTopKRouter(gate=nn.Linear(dim, s["experts"], bias=False), dim=dim,
                                               num_experts=s["experts"], experts_per_token=s["top_k"]),
                  shared_expert=None)
        layers.append(TransformerSelfAttentionLayer(attn=attention, mlp=moe, sa_norm=RMSNorm(dim, eps=NORM_EPS),
                                                    mlp_norm=RMSNorm(dim, eps=NORM_EPS)))
    model = TransformerDecoder(tok_embeddings=nn.Embedding(s["vocab"], dim), layers=nn.ModuleList(layers),
                               max_seq_len=s["seq"], num_heads=s["heads"], head_dim=hd,
                               norm=RMSNorm(dim, eps=NORM_EPS), output=nn.Linear(dim, s["vocab"], bias=False))
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.normal_(0.0, INIT_STD)
            else:
                p.fill_(1.0)  # the RMSNorm scales
    return model


def worker_train(impl: str, s: dict, model_dir: pathlib.Path, data: pathlib.Path, steps: int, threads: int) -> None:
    import resource
    import torch
    torch.set_num_threads(threads)
    rows = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    if impl == "transformers":
        from transformers import Qwen3MoeForCausalLM
        model = Qwen3MoeForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
        model.config.use_cache = False

        def loss_of(tokens, labels):
            return model(input_ids=tokens, labels=labels, use_cache=False).loss
    else:
        from torchtune.modules.loss import CEWithChunkedOutputLoss
        model = torchtune_decoder(s)
        ce = CEWithChunkedOutputLoss()
        model.set_num_output_chunks(ce.num_output_chunks)

        def loss_of(tokens, labels):
            # The recipe's shift: position i predicts label i + 1; the last position has none.
            shifted = torch.cat([labels[:, 1:], torch.full_like(labels[:, :1], ce.ignore_index)], dim=1)
            return ce(model(tokens), shifted)
    model.train()
    params = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, eps=EPS, weight_decay=WEIGHT_DECAY)
    per_step = []
    for step in range(steps):
        start = time.perf_counter()
        row = rows[step % len(rows)]
        tokens = torch.tensor([row["tokens"]], dtype=torch.long)
        labels = torch.tensor([row["labels"]], dtype=torch.long)
        loss = loss_of(tokens, labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        value = loss.item()
        elapsed = time.perf_counter() - start
        per_step.append({"loss": value, "tokens_per_s": (tokens.numel() - tokens.size(0)) / elapsed, "s": elapsed})
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux
    print(json.dumps({"steps": per_step, "peak_rss_gib": peak_gib, "params": params}))


# --------------------------------------------------------------------------------------------
# One run of each implementation
# --------------------------------------------------------------------------------------------
class RunFailed(Exception):
    pass


def tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def checkpoint_files(model_dir: pathlib.Path) -> list:
    index = model_dir / "model.safetensors.index.json"
    if index.exists():
        return sorted(set(json.loads(index.read_text())["weight_map"].values()))
    return ["model.safetensors"]


def fthost_config(model_dir: pathlib.Path, data: pathlib.Path, out: pathlib.Path, steps: int, threads: int) -> str:
    files = ", ".join(f'"{f}"' for f in checkpoint_files(model_dir))
    return f"""output_dir = "{out}"
seed = 0
epochs = 1
max_steps_per_epoch = {steps}
batch_size = 1
gradient_accumulation_steps = 1
shuffle = false
dtype = "fp32"
num_threads = {threads}
log_every_n_steps = 1
log_peak_memory_stats = true

[model]
_component_ = "fthost.models.from_hf_config"
path = "{model_dir}"

[checkpointer]
_component_ = "torchtune.training.FullModelHFCheckpointer"
checkpoint_dir = "{model_dir}"
checkpoint_files = [{files}]
model_type = "QWEN3_MOE"
output_dir = "{out}"

[dataset]
_component_ = "fthost.datasets.tokenized_jsonl"
source = "{data}"

[loss]
_component_ = "torchtune.modules.loss.CEWithChunkedOutputLoss"

[optimizer]
_component_ = "torch.optim.AdamW"
lr = {LR}
betas = [{BETAS[0]}, {BETAS[1]}]
eps = {EPS}
weight_decay = {WEIGHT_DECAY}

[metric_logger]
_component_ = "torchtune.training.metric_logging.DiskLogger"
log_dir = "{out}/logs"
filename = "metrics.jsonl"
output_fmt = "jsonl"
"""


def run_fthost(work: pathlib.Path, model_dir: pathlib.Path, data: pathlib.Path, steps: int, threads: int,
               ranks: int = 1, overrides: tuple = ()) -> dict:
    if not FTHOST.exists():
        raise RunFailed(f"{FTHOST} is missing (build it first)")
    out = pathlib.Path(tempfile.mkdtemp(prefix="fthost-out-", dir=work))
    config = out / "moe.toml"
    # Ranks share the machine's threads.
    threads_per_rank = max(1, threads // ranks)
    config.write_text(fthost_config(model_dir, data, out, steps, threads_per_rank))
    launch = ["--nproc-per-node", str(ranks)] if ranks > 1 else []
    try:
        proc = subprocess.run([str(FTHOST)] + launch + ["--config", str(config)] + list(overrides),
                              env=thread_env(threads_per_rank), cwd=ROOT, capture_output=True, text=True,
                              timeout=RUN_TIMEOUT_S)
        if proc.returncode != 0:
            raise RunFailed(f"exit {proc.returncode}:\n{tail(proc.stdout + proc.stderr)}")
        rows = [json.loads(l) for l in (out / "logs" / "metrics.jsonl").read_text().splitlines() if l.strip()]
    finally:
        shutil.rmtree(out, ignore_errors=True)  # its final checkpoint: the model's size
    steady = rows[1:] or rows
    return {"tokens_per_s": statistics.median(r["tokens_per_second_per_gpu"] for r in steady),
            "peak_rss_gib": max(r["peak_memory_rss"] for r in rows),
            "losses": [r["loss"] for r in rows]}


def run_python(impl: str, a, model_dir: pathlib.Path, data: pathlib.Path, steps: int) -> dict:
    args = [SYSTEM_PYTHON, str(pathlib.Path(__file__).resolve()), "--worker", impl, "--model-dir", str(model_dir),
            "--data", str(data), "--steps", str(steps), "--threads", str(a.threads), "--layers", str(a.layers),
            "--experts", str(a.experts), "--seq-len", str(a.seq_len)] + (["--smoke"] if a.smoke else [])
    pythonpath = a.torchtune_src if impl == "torchtune" and a.torchtune_src else ""
    proc = subprocess.run(args, env=thread_env(a.threads, pythonpath), cwd=ROOT, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S)
    if proc.returncode != 0:
        raise RunFailed(f"exit {proc.returncode}:\n{tail(proc.stderr)}")
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    steady = r["steps"][1:] or r["steps"]
    return {"tokens_per_s": statistics.median(x["tokens_per_s"] for x in steady), "peak_rss_gib": r["peak_rss_gib"],
            "losses": [x["loss"] for x in r["steps"]], "params": r["params"]}


def torchtune_moe_available(a) -> tuple:
    """(available, description) of the torchtune the torchtune column would import."""
    code = ("import importlib.util, json, torchtune; "
            "print(json.dumps([getattr(torchtune, '__version__', '') or '(version unset)', torchtune.__file__, "
            "importlib.util.find_spec('torchtune.modules.moe') is not None]))")
    proc = subprocess.run([SYSTEM_PYTHON, "-c", code], env=thread_env(1, a.torchtune_src or ""), capture_output=True,
                          text=True)
    if proc.returncode != 0:
        return False, f"torchtune does not import: {tail(proc.stderr, 1)}"
    version, path, has_moe = json.loads(proc.stdout.strip().splitlines()[-1])
    if not has_moe:
        return False, (f"torchtune {version} ({path}) has no torchtune.modules.moe: its MoE layer (MoE, "
                       "GroupedExperts, TokenChoiceTopKRouter, used by Llama 4) is in torchtune's main branch, "
                       "not in the installed version; column skipped (torchtune main's router also calls "
                       "torch.histc on int64 indices, which has no CPU kernel)")
    return True, f"torchtune {version} ({path}), torchtune.modules.moe"


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------
def gib(n_bytes: float) -> float:
    return n_bytes / 2**30


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--experts", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--steps", type=int, default=6, help="optimizer steps per run, the first a warm-up")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (hidden 64, 4 experts, seq 32, 2 steps)")
    parser.add_argument("--only", default=",".join(DEFAULT_IMPLS),
                        help="comma-separated subset of " + ",".join(IMPLS) + " (the two-rank runs: "
                        "--expert-parallel)")
    parser.add_argument("--expert-parallel", action="store_true",
                        help="fthost on 2 ranks (FSDP, --threads shared between them, one sample per rank and "
                        "step) without and with expert_parallel_dim = 2, instead of the single-process columns")
    parser.add_argument("--torchtune-src", default="", help="a torchtune source tree to import for its column")
    parser.add_argument("--keep", action="store_true", help="keep the temporary model directory")
    parser.add_argument("--worker", choices=["make-model", "transformers", "torchtune"], help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--samples", type=int, default=0, help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.smoke and "--steps" not in sys.argv:
        a.steps = 2
    s = shape(a)
    if a.worker == "make-model":
        return worker_make_model(s, pathlib.Path(a.model_dir), pathlib.Path(a.data), a.samples)
    if a.worker:
        return worker_train(a.worker, s, pathlib.Path(a.model_dir), pathlib.Path(a.data), a.steps, a.threads)

    impls = list(TWO_RANK_RUNS) if a.expert_parallel else [i for i in IMPLS if i in a.only.split(",")]
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"uptime at start: {uptime}")
    print(f"{os.cpu_count()} cores; {a.threads} threads per run (OMP_NUM_THREADS, OMP_WAIT_POLICY=PASSIVE, "
          f"torch.set_num_threads / num_threads); {a.repeats} round(s) of {' '.join(impls)}; {a.steps} optimizer "
          f"steps per run, the first dropped as warm-up; float32, AdamW lr {LR}, batch 1 x {s['seq']} tokens",
          flush=True)
    if "torchtune" in impls:
        tt_ok, tt_desc = torchtune_moe_available(a)
        print(f"torchtune: {tt_desc}", flush=True)
        if not tt_ok:
            impls.remove("torchtune")
    work = pathlib.Path(tempfile.mkdtemp(prefix="fthost-moe-bench-"))
    model_dir, data = work / "model", work / "tokens.jsonl"
    try:
        made = subprocess.run([SYSTEM_PYTHON, str(pathlib.Path(__file__).resolve()), "--worker", "make-model",
                               "--model-dir", str(model_dir), "--data", str(data),
                               "--samples", str(a.steps * (2 if a.expert_parallel else 1)),
                               "--layers", str(a.layers), "--experts", str(a.experts), "--seq-len", str(a.seq_len)]
                              + (["--smoke"] if a.smoke else []), env=thread_env(a.threads), capture_output=True,
                              text=True)
        if made.returncode != 0:
            sys.exit(f"writing the model failed ({made.returncode}):\n{tail(made.stderr)}")
        counts = json.loads(made.stdout.strip().splitlines()[-1])
        p = counts["params"]
        print(f"model: Qwen3-MoE (Qwen3-30B-A3B's layer shape{' reduced for --smoke' if a.smoke else ''}): "
              f"{s['layers']} layers, hidden {s['hidden']}, {s['heads']} heads / {s['kv_heads']} KV heads of "
              f"{s['head_dim']}, {s['experts']} experts of width {s['moe_hidden']}, top-{s['top_k']} "
              f"(renormalised), vocab {s['vocab']}", flush=True)
        if not a.smoke:
            print(f"  the vocabulary is reduced from Qwen3's 151936 to {s['vocab']} to keep the benchmark about the "
                  f"experts; the published model has 48 layers of 128 experts")
        print(f"  {p:,} parameters ({p / 1e6:.1f} M; experts {counts['experts_params'] / 1e6:.1f} M; "
              f"{counts['active'] / 1e6:.1f} M multiplied per token): fp32 parameters + gradients + AdamW moments "
              f"= {gib(16 * p):.2f} GiB", flush=True)
        print(f"  written by transformers to {model_dir} ({gib(sum(f.stat().st_size for f in model_dir.iterdir())):.2f} "
              f"GiB), with {a.steps} random samples", flush=True)

        results = {i: [] for i in impls}
        failures = {}
        for rnd in range(a.repeats):
            for impl in impls:
                if impl in failures:
                    continue
                start = time.perf_counter()
                try:
                    if impl == "fthost":
                        r = run_fthost(work, model_dir, data, a.steps, a.threads)
                    elif impl in TWO_RANK_RUNS:
                        r = run_fthost(work, model_dir, data, a.steps, a.threads, 2, tuple(TWO_RANK_RUNS[impl]))
                    else:
                        r = run_python(impl, a, model_dir, data, a.steps)
                except (RunFailed, subprocess.TimeoutExpired) as e:
                    failures[impl] = str(e)
                    print(f"round {rnd + 1} {impl:12s} FAILED: {e}", flush=True)
                    continue
                r["wall_s"] = time.perf_counter() - start
                results[impl].append(r)
                losses = " ".join(f"{x:.4f}" for x in r["losses"][:3])
                print(f"round {rnd + 1} {impl:12s} {r['tokens_per_s']:9.1f} tok/s  peak RSS {r['peak_rss_gib']:6.2f} GiB  "
                      f"losses {losses}{' ...' if len(r['losses']) > 3 else ''}  wall {r['wall_s']:.1f} s", flush=True)

        done = [i for i in impls if results[i]]
        med = {i: {k: statistics.median(r[k] for r in results[i]) for k in ("tokens_per_s", "peak_rss_gib")}
               for i in done}
        print()
        print(f"{'implementation':14s} {'tokens/s (median)':>18s} {'peak RSS GiB':>13s} {'fthost/x tok/s':>15s} "
              f"{'per-round':>10s} {'fthost/x RSS':>13s}")
        for impl in IMPLS:
            if impl in med:
                m = med[impl]
                if impl != "fthost" and "fthost" in med:
                    pairs = [f["tokens_per_s"] / x["tokens_per_s"] for f, x in zip(results["fthost"], results[impl])]
                    ratio = (f"{med['fthost']['tokens_per_s'] / m['tokens_per_s']:15.2f} "
                             f"{statistics.median(pairs):10.2f} "
                             f"{med['fthost']['peak_rss_gib'] / m['peak_rss_gib']:13.2f}")
                else:
                    ratio = f"{'':15s} {'':10s} {'':13s}"
                print(f"{impl:14s} {m['tokens_per_s']:18.1f} {m['peak_rss_gib']:13.2f} {ratio}")
            elif impl in failures:
                print(f"{impl:14s} {'failed':>18s}")
            elif impl == "torchtune" and impl in a.only.split(",") and not a.expert_parallel:
                print(f"{impl:14s} {'n/a':>18s}   (no torchtune.modules.moe in the installed torchtune)")
        print("fthost/x: the ratio of the medians; per-round: the median of the ratios within each round")
        if all(i in done for i in TWO_RANK_RUNS):
            dp, ep = (results[i] for i in TWO_RANK_RUNS)
            pairs = [e["tokens_per_s"] / d["tokens_per_s"] for d, e in zip(dp, ep)]
            print(f"expert parallelism, 2 ranks (tokens/s per rank, peak RSS of rank 0): expert_parallel_dim = 2 / "
                  f"every expert on each rank = {med['fthost-2ranks-ep2']['tokens_per_s'] / med['fthost-2ranks']['tokens_per_s']:.2f} "
                  f"(per-round median {statistics.median(pairs):.2f}); peak RSS "
                  f"{med['fthost-2ranks-ep2']['peak_rss_gib'] / med['fthost-2ranks']['peak_rss_gib']:.2f}x; first losses "
                  f"{dp[0]['losses'][0]:.5f} / {ep[0]['losses'][0]:.5f}")
        counted = [f"{i} {results[i][0]['params']:,}" for i in done if "params" in results[i][0]]
        if counted:
            print(f"parameters as the Python sides count them: {', '.join(counted)} (written: {p:,})")
        if "fthost" in done and "transformers" in done:
            print(f"first losses (same weights, same data): fthost {results['fthost'][0]['losses'][0]:.5f}, "
                  f"transformers {results['transformers'][0]['losses'][0]:.5f}")
        if failures:
            sys.exit(1)
    finally:
        if a.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
