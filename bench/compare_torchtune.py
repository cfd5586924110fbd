#!/usr/bin/env python3
"""fthost against torchtune's own recipe on this CPU. Not a test: prints medians and ratios.

  .venv/bin/python bench/compare_torchtune.py [--pairs 3] [--only 5m,100m,1b] [--layouts 1x2,2x1]
      [--dtype fp32|bf16] [--steps N] [--warmup N] [--optimizer-in-bwd] [--no-compile] [--quick]

Three columns, run in turn within one invocation (A B C A B C ...), so all see the same machine
state: torchtune 0.6.1's `full_finetune_distributed` recipe eager, the same with `compile: True`
(torch.compile of every layer and of the loss, inductor), and fthost (build/bin/fthost).
Each trains the same model from the same initial weights on the same data: random token
sequences (bench/run.py's random_token_data), no padding, `CEWithChunkedOutputLoss`, AdamW with
the same lr, betas, eps and weight decay, no LR schedule, no clipping, one micro-batch per step.

- Shapes: the 5M and 100M models of bench/compare_pytorch.py (MODELS) and Llama-3.2-1B
  (`torchtune.models.llama3_2.llama3_2_1b` on both sides) with activation checkpointing.
  torchtune ties the output projection to the embedding only through its llama3_2 builder, so
  the 5M and 100M models are llama3_2 (Llama 3's RoPE scaled by 32) on torchtune's side and
  fthost's `llama3` with `scale_factor = 32` on fthost's; the step's work is that of
  compare_pytorch's models.
- Weights: random (Hugging Face's Llama initialisation on torchtune's builder, seed 0), written
  once per shape and dtype as a Hugging Face directory (bench/torchtune_side/initial_checkpoint.py)
  that both sides' FullModelHFCheckpointer load, so the first steps' losses are printed side by
  side: in fp32 they agree to float32 rounding. Each run also saves its final checkpoint (its
  recipe does), deleted after the run: the temporary directory needs twice the model's size free
  (1b: 2 x 2.5 GB in bf16, 2 x 5 GB in fp32; TMPDIR chooses where).
- Memory: 1b in fp32 with an ordinary AdamW step holds about 20 GB of parameters, gradients and
  moments per side; on a 24 GB machine use --dtype bf16 or --optimizer-in-bwd.
- Layouts: R x T = R ranks of T threads each (OMP_NUM_THREADS, fthost's num_threads). Several
  ranks are started by this script with torchrun's variables (RANK, WORLD_SIZE, MASTER_ADDR, ...,
  a free loopback port), the same way for both: torchtune's recipe then shards with FSDP2
  (fully_shard on init_device_mesh("cpu") over a Gloo process group: its docstring says "Training
  on CPU is not supported", yet with PyTorch 2.13 it trains, and its losses equal fthost's),
  fthost with fthost.parallelism.fsdp, as bench/run.py's `--nproc-per-node 2` run. The batch is
  the same per step: batch / R per rank.
- On a CPU the recipe calls three CUDA memory functions unconditionally; bench/gpu_benchmark.py's
  CPU_RECIPE runs it with those stubbed, and nothing else changed. Both sides save their final
  checkpoint, as their recipes do (outside the measured steps; it is in the peak RSS).

How each side counts tokens, and what is printed:
- tokens: fthost counts the targets after the label shift, batch x (seq - 1) per rank and step
  (docs/parity.md). torchtune 0.6.1 counts `labels != ignore_index` before the shift, which counts
  each sample's first label, a label the loss never sees; bench/torchtune_side/random_tokens.py
  masks that first label (no loss or gradient changes), so both count batch x (seq - 1). Both log
  `tokens_per_second_per_gpu` = the step's tokens over all ranks / the step's wall time / ranks,
  the wall time covering the batch's reading and collation, forward, backward, the optimizer step
  and the loss's all-reduce and read-back (torchtune times from the end of the previous step's
  logging, fthost from the start of its train_step; neither counts its own logging). Printed
  tokens/s is the job's: that x ranks, the median over the steps after --warmup (torch.compile
  compiles in the first step; inductor's cache in /tmp makes later runs' first steps shorter).
- MFU: job tokens/s x FLOPs per token / the GEMM peak of the dtype on R x T threads, measured once
  in this invocation (compare_pytorch.gemm_peak_gflops, 2048^3). FLOPs per token as torchtitan
  counts them: 6 N + 12 x layers x heads x head_dim x seq, N the parameters a token's forward
  multiplies through (all but the input embedding; a tied model's embedding is its output
  projection and counts). Activation checkpointing's recompute is not counted.
- peak RSS: of each rank's whole process tree (the rank and, for torch.compile, its compile
  workers): the larger of the sum of their RSS sampled every 0.1 s and the exact high-water mark
  of the largest process (wait4's ru_maxrss); the largest rank's. "train" is rank 0's own
  high-water mark (VmHWM) at its last logged step, before the final checkpoint save.
- ratios fthost / torchtune per pair (each pair ran back to back, so its ratio cancels most of the
  machine's drift), their median, and the ratio of the medians.
"""
import argparse
import json
import os
import pathlib
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import compare_pytorch  # noqa: E402
import gpu_benchmark  # noqa: E402
from compare_pytorch import FTHOST, LR, MODELS, NORM_EPS, ROOT, ROPE_BASE, SYSTEM_PYTHON  # noqa: E402
from run import random_token_data  # noqa: E402

BENCH = ROOT / "bench"
FTHOST_BASE_CONFIG = BENCH / "configs" / "llama_125m.toml"
INITIAL_CHECKPOINT = BENCH / "torchtune_side" / "initial_checkpoint.py"

# name: (vocab, dim, layers, heads, kv_heads, hidden, tied, batch, seq); 1b is llama3_2_1b at a
# sequence a CPU step finishes in minutes.
SHAPES = {**MODELS, "1b": (gpu_benchmark.VOCAB, gpu_benchmark.DIM, gpu_benchmark.LAYERS, gpu_benchmark.HEADS,
                           gpu_benchmark.KV_HEADS, gpu_benchmark.HIDDEN, True, 1, 2048)}
LLAMA3_2_1B_MAX_SEQ_LEN = 131072
DEFAULT_STEPS = {"5m": 8, "100m": 8, "1b": 3}
DEFAULT_WARMUP = {"5m": 2, "100m": 2, "1b": 1}
BETAS = (0.9, 0.999)
EPS = 1e-8
WEIGHT_DECAY = 0.01
TORCH_DTYPES = {"fp32": "float32", "bf16": "bfloat16"}
RUN_TIMEOUT_S = 4 * 3600
RSS_SAMPLE_S = 0.1

SIDES = ["torchtune eager", "torchtune compile", "fthost"]


# --------------------------------------------------------------------------------------------
# Shapes
# --------------------------------------------------------------------------------------------
def builder_kwargs(shape: str) -> dict:
    """torchtune's llama3_2 builder arguments for the shape (also the initial checkpoint's)."""
    vocab, dim, layers, heads, kv_heads, hidden, tied, _batch, seq = SHAPES[shape]
    return {"vocab_size": vocab, "num_layers": layers, "num_heads": heads, "num_kv_heads": kv_heads,
            "embed_dim": dim, "max_seq_len": LLAMA3_2_1B_MAX_SEQ_LEN if shape == "1b" else seq,
            "intermediate_dim": hidden, "norm_eps": NORM_EPS, "rope_base": ROPE_BASE, "tie_word_embeddings": tied}


def multiplied_params(shape: str) -> int:
    vocab, dim, layers, heads, kv_heads, hidden, _tied, _b, _s = SHAPES[shape]
    head_dim = dim // heads
    attention = 2 * dim * heads * head_dim + 2 * dim * kv_heads * head_dim
    per_layer = attention + 3 * dim * hidden + 2 * dim  # + the two RMSNorm scales
    return layers * per_layer + dim + vocab * dim  # + the final norm and the output projection


def flops_per_token(shape: str) -> float:
    _v, dim, layers, heads, _kv, _h, _t, _b, seq = SHAPES[shape]
    return 6 * multiplied_params(shape) + 12 * layers * heads * (dim // heads) * seq


def write_initial_checkpoint(shape: str, dtype: str, directory: pathlib.Path) -> None:
    proc = subprocess.run([SYSTEM_PYTHON, str(INITIAL_CHECKPOINT), str(directory), dtype,
                           json.dumps(builder_kwargs(shape))], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"writing the initial {shape} checkpoint failed ({proc.returncode}):\n{proc.stderr}")


# --------------------------------------------------------------------------------------------
# One run: R rank processes, their peak RSS and their metrics
# --------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# compare_pytorch's helpers read its module-wide thread count, as its own --threads sets it.
def thread_env(threads: int) -> dict:
    compare_pytorch.THREADS = threads
    return compare_pytorch.thread_env()


def gemm_peak_gflops(dtype: str, threads: int) -> float:
    compare_pytorch.THREADS = threads
    return compare_pytorch.gemm_peak_gflops(TORCH_DTYPES[dtype])


def process_tree_rss_bytes(root: int) -> int:
    """The RSS of root and all its descendants now (processes that vanish meanwhile count 0)."""
    total, pending, page = 0, [root], os.sysconf("SC_PAGE_SIZE")
    while pending:
        pid = pending.pop()
        try:
            total += int(pathlib.Path(f"/proc/{pid}/statm").read_text().split()[1]) * page
            for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
                pending += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return total


def launch(command: list, ranks: int, threads: int, out: pathlib.Path, extra_env: dict) -> dict:
    """Starts the ranks, samples their process trees' RSS until all have exited, and stops the
    others when one fails (as torchrun would)."""
    port = free_port()
    procs = []
    for rank in range(ranks):
        env = dict(thread_env(threads), RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(ranks),
                   LOCAL_WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), **extra_env)
        with (out / f"rank{rank}.log").open("w") as log:
            procs.append(subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT))
    peak_tree = [0] * ranks
    peak_process = [0] * ranks
    codes = [None] * ranks
    first_failure = None  # the rank whose failure stopped the others: the one whose log says why
    start = time.perf_counter()
    while None in codes:
        for rank, proc in enumerate(procs):
            if codes[rank] is not None:
                continue
            peak_tree[rank] = max(peak_tree[rank], process_tree_rss_bytes(proc.pid))
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                codes[rank] = proc.returncode = os.waitstatus_to_exitcode(status)
                peak_process[rank] = usage.ru_maxrss * 1024
                if codes[rank] != 0 and first_failure is None:
                    first_failure = rank
                    for other in procs:
                        if other.returncode is None:
                            other.send_signal(signal.SIGTERM)
        if time.perf_counter() - start > RUN_TIMEOUT_S:
            for proc in procs:
                if proc.returncode is None:
                    proc.kill()
        time.sleep(RSS_SAMPLE_S)
    return {"codes": codes, "first_failure": first_failure, "wall_s": time.perf_counter() - start,
            "peak_rss_gib": max(max(t, p) for t, p in zip(peak_tree, peak_process)) / 2**30}


def read_metrics(log: pathlib.Path, ranks: int, warmup: int) -> dict:
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
    if not rows:
        return {}
    steady = rows[warmup:] or rows
    return {"tokens_per_s": ranks * statistics.median(r["tokens_per_second_per_gpu"] for r in steady),
            "train_peak_rss_gib": max(r.get("peak_memory_rss", 0.0) for r in rows),
            "losses": [r["loss"] for r in rows]}


def finish(result: dict, out: pathlib.Path, metrics: pathlib.Path, ranks: int, warmup: int) -> dict:
    result.update(read_metrics(metrics, ranks, warmup))
    if result["first_failure"] is not None or "tokens_per_s" not in result:
        rank = result["first_failure"] or 0
        lines = (out / f"rank{rank}.log").read_text(errors="replace").strip().splitlines()
        result["ok"] = False
        result["why"] = f"rank {rank} exited {result['codes'][rank]}: " + "\n      ".join(lines[-8:])
    else:
        result["ok"] = True
    shutil.rmtree(out, ignore_errors=True)  # a 1B run's saved checkpoint is gigabytes
    return result


# --------------------------------------------------------------------------------------------
# The two recipes' configurations for one run
# --------------------------------------------------------------------------------------------
class Run:
    """What every side of one comparison trains."""

    def __init__(self, shape, ranks, threads, dtype, steps, warmup, optimizer_in_bwd, data, checkpoint):
        self.shape, self.ranks, self.threads, self.dtype = shape, ranks, threads, dtype
        self.steps, self.warmup, self.optimizer_in_bwd = steps, warmup, optimizer_in_bwd
        self.data, self.checkpoint = data, checkpoint
        self.activation_checkpointing = shape == "1b"
        self.batch_per_rank = max(1, SHAPES[shape][7] // ranks)


def torchtune_config(run: Run, compile_model: bool, out: pathlib.Path) -> pathlib.Path:
    if run.shape == "1b":
        model = {"_component_": "torchtune.models.llama3_2.llama3_2_1b"}
    else:
        model = {"_component_": "torchtune.models.llama3_2.llama3_2", **builder_kwargs(run.shape)}
    cfg = {
        "output_dir": str(out), "seed": 0, "shuffle": False, "epochs": 1, "max_steps_per_epoch": run.steps,
        "batch_size": run.batch_per_rank, "gradient_accumulation_steps": 1, "clip_grad_norm": None,
        "compile": compile_model, "optimizer_in_bwd": run.optimizer_in_bwd, "device": "cpu", "dtype": run.dtype,
        "resume_from_checkpoint": False, "enable_activation_checkpointing": run.activation_checkpointing,
        "enable_activation_offloading": False, "log_every_n_steps": 1, "log_peak_memory_stats": False,
        "tokenizer": {"_component_": "torchtune_side.random_tokens.stub_tokenizer", "max_seq_len": SHAPES[run.shape][8]},
        "dataset": {"_component_": "torchtune_side.random_tokens.random_token_dataset", "source": str(run.data)},
        "model": model,
        "checkpointer": {"_component_": "torchtune.training.FullModelHFCheckpointer",
                         "checkpoint_dir": str(run.checkpoint), "checkpoint_files": ["model.safetensors"],
                         "recipe_checkpoint": None, "output_dir": str(out / "checkpoints"), "model_type": "LLAMA3_2"},
        "optimizer": {"_component_": "torch.optim.AdamW", "lr": LR, "betas": list(BETAS), "eps": EPS,
                      "weight_decay": WEIGHT_DECAY},
        "loss": {"_component_": "torchtune.modules.loss.CEWithChunkedOutputLoss"},
        "metric_logger": {"_component_": "torchtune_side.jsonl_logger.JsonlLogger", "log_dir": str(out / "logs")},
        "profiler": {"_component_": "torchtune.training.setup_torch_profiler", "enabled": False},
    }
    path = out / "torchtune.yaml"
    path.write_text(json.dumps(cfg, indent=1))  # YAML is JSON's superset
    return path


def run_torchtune(run: Run, compile_model: bool) -> dict:
    out = pathlib.Path(tempfile.mkdtemp(prefix="compare-torchtune-tt-"))
    config = torchtune_config(run, compile_model, out)
    pythonpath = os.pathsep.join(filter(None, [str(BENCH), os.environ.get("PYTHONPATH")]))
    result = launch([SYSTEM_PYTHON, "-c", gpu_benchmark.CPU_RECIPE, str(config)], run.ranks, run.threads, out,
                    {"PYTHONPATH": pythonpath})
    return finish(result, out, out / "logs" / "metrics.jsonl", run.ranks, run.warmup)


def fthost_overrides(run: Run, out: pathlib.Path) -> list:
    vocab, dim, layers, heads, kv_heads, hidden, tied, _batch, seq = SHAPES[run.shape]
    if run.shape == "1b":
        model = ["model._component_=torchtune.models.llama3_2.llama3_2_1b"]
    else:
        model = ["model._component_=torchtune.models.llama3.llama3", f"model.vocab_size={vocab}",
                 f"model.embed_dim={dim}", f"model.num_layers={layers}", f"model.num_heads={heads}",
                 f"model.num_kv_heads={kv_heads}", f"model.intermediate_dim={hidden}", f"model.max_seq_len={seq}",
                 f"model.tie_word_embeddings={'true' if tied else 'false'}", f"model.rope_base={ROPE_BASE}",
                 f"model.norm_eps={NORM_EPS}", "model.scale_factor=32"]  # torchtune's llama3_2 RoPE
    parallelism = ["parallelism._component_=fthost.parallelism.fsdp"] if run.ranks > 1 else []
    return [f"output_dir={out}", "~model", *model, f"dataset.source={run.data}", f"batch_size={run.batch_per_rank}",
            f"max_steps_per_epoch={run.steps}", "epochs=1", f"num_threads={run.threads}", f"dtype={run.dtype}",
            f"optimizer.lr={LR}", f"optimizer.betas=[{BETAS[0]}, {BETAS[1]}]", f"optimizer.eps={EPS}",
            f"optimizer.weight_decay={WEIGHT_DECAY}", f"checkpointer.checkpoint_dir={run.checkpoint}",
            "checkpointer.model_type=LLAMA3_2",
            f"enable_activation_checkpointing={'true' if run.activation_checkpointing else 'false'}",
            f"optimizer_in_bwd={'true' if run.optimizer_in_bwd else 'false'}", *parallelism,
            "metric_logger._component_=torchtune.training.metric_logging.DiskLogger",
            f"metric_logger.log_dir={out}/logs", "metric_logger.filename=metrics.jsonl",
            "metric_logger.output_fmt=jsonl", "log_every_n_steps=1", "log_peak_memory_stats=true"]


FTHOST_ENV = {}  # --fthost-env


def run_fthost(run: Run) -> dict:
    out = pathlib.Path(tempfile.mkdtemp(prefix="compare-torchtune-ft-"))
    command = [str(FTHOST), "--config", str(FTHOST_BASE_CONFIG), *fthost_overrides(run, out)]
    result = launch(command, run.ranks, run.threads, out, dict(FTHOST_ENV))
    return finish(result, out, out / "logs" / "metrics.jsonl", run.ranks, run.warmup)


# --------------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------------
def describe(result: dict) -> str:
    return f"{result['tokens_per_s']:.0f} tok/s" if result["ok"] else "failed"


def report(run: Run, sides: list, results: dict, peak_gflops: float) -> None:
    label = f"{run.shape:>4} {run.ranks}x{run.threads}"
    flop_per_token = flops_per_token(run.shape)
    print(f"{label} {'side':18s} {'tokens/s':>9s} {'MFU':>6s} {'peak RSS':>9s} {'train':>6s}  wall", flush=True)
    medians = {}
    for side in sides:
        ok = [r for r in results[side] if r["ok"]]
        if not ok:
            print(f"{label} {side:18s} does not run:\n      {results[side][0]['why']}", flush=True)
            continue
        medians[side] = statistics.median(r["tokens_per_s"] for r in ok)
        rss = statistics.median(r["peak_rss_gib"] for r in ok)
        train_rss = statistics.median(r["train_peak_rss_gib"] for r in ok)
        wall = statistics.median(r["wall_s"] for r in ok)
        mfu = medians[side] * flop_per_token / (peak_gflops * 1e9)
        print(f"{label} {side:18s} {medians[side]:9.1f} {mfu:6.3f} {rss:6.2f} GiB {train_rss:6.2f}  {wall:.0f} s",
              flush=True)
    for baseline in sides[:-1]:
        if "fthost" not in medians or baseline not in medians:
            continue
        pairs = [f["tokens_per_s"] / b["tokens_per_s"] for f, b in zip(results["fthost"], results[baseline])
                 if f["ok"] and b["ok"]]
        print(f"{label} fthost / {baseline}: median of {len(pairs)} pair ratios {statistics.median(pairs):.2f} "
              f"(pairs: {', '.join(f'{p:.2f}' for p in pairs)}), ratio of medians "
              f"{medians['fthost'] / medians[baseline]:.2f}", flush=True)
    first = {side: results[side][0] for side in sides if results[side][0]["ok"]}
    shown = min(3, run.steps)
    for side, r in first.items():
        print(f"{label} first losses, {side:18s} {' '.join(f'{l:.6f}' for l in r['losses'][:shown])}", flush=True)
    if "fthost" in first and "torchtune eager" in first:
        worst = max(abs(f - t) / abs(t) for f, t in zip(first["fthost"]["losses"], first["torchtune eager"]["losses"]))
        print(f"{label} largest relative loss difference, fthost vs torchtune eager, over "
              f"{len(first['fthost']['losses'])} steps: {worst:.1e}", flush=True)


# --------------------------------------------------------------------------------------------
def parse_layout(text: str) -> tuple:
    ranks, threads = text.lower().split("x")
    return int(ranks), int(threads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, help="rounds of A B C per shape and layout (default 3; --quick: 1)")
    parser.add_argument("--only", help=f"shapes, comma-separated, of {', '.join(SHAPES)} (default: all; --quick: 5m)")
    parser.add_argument("--layouts", default="1x2,2x1", help="RANKSxTHREADS, comma-separated (default 1x2,2x1)")
    parser.add_argument("--dtype", choices=sorted(TORCH_DTYPES), default="fp32")
    parser.add_argument("--steps", type=int, help="optimizer steps per run (default 8; 1b: 3; --quick: 3)")
    parser.add_argument("--warmup", type=int, help="first steps of each run not measured (default 2; 1b and --quick: 1)")
    parser.add_argument("--optimizer-in-bwd", action="store_true", help="optimizer_in_bwd = true on every side")
    parser.add_argument("--no-compile", action="store_true", help="leave out the torchtune compile column")
    parser.add_argument("--sides", help=f"columns to run, comma-separated, of {', '.join(SIDES)} (default: all)")
    parser.add_argument("--fthost-env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for fthost's runs (e.g. FT_HEAP_REUSE=0); repeatable")
    parser.add_argument("--quick", action="store_true", help="a smoke check: the 5m shape (unless --only), 3 steps, 1 pair")
    a = parser.parse_args()
    if not FTHOST.exists():
        sys.exit(f"{FTHOST} is missing: build first (bash scripts/build.sh)")
    check = subprocess.run([SYSTEM_PYTHON, "-c", "import torchtune, torchao, torchdata"], capture_output=True, text=True)
    if check.returncode != 0:
        sys.exit(f"torchtune is missing from .venv ({check.stderr.strip().splitlines()[-1]})")
    shapes = a.only.split(",") if a.only else (["5m"] if a.quick else list(SHAPES))
    for shape in shapes:
        if shape not in SHAPES:
            parser.error(f"--only: unknown shape {shape!r}; expected some of {', '.join(SHAPES)}")
    layouts = [parse_layout(l) for l in a.layouts.split(",") if l]
    pairs = a.pairs or (1 if a.quick else 3)
    sides = [s for s in SIDES if not (a.no_compile and s == "torchtune compile")]
    if a.sides:
        chosen = a.sides.split(",")
        for side in chosen:
            if side not in SIDES:
                parser.error(f"--sides: unknown column {side!r}; expected some of {', '.join(SIDES)}")
        sides = [s for s in sides if s in chosen]
    FTHOST_ENV.update(item.split("=", 1) for item in a.fthost_env)

    # One peak per core count: R x T threads in all, on the GEMM of the dtype.
    peaks = {}
    for cores in sorted({r * t for r, t in layouts}):
        peaks[cores] = gemm_peak_gflops(a.dtype, cores)
    print(f"load average {os.getloadavg()[0]:.2f} at start; {os.cpu_count()} cores; OMP_WAIT_POLICY=PASSIVE; "
          f"{a.dtype}; AdamW lr {LR} betas {BETAS} eps {EPS} weight decay {WEIGHT_DECAY}; "
          f"optimizer_in_bwd {'on' if a.optimizer_in_bwd else 'off'}; {pairs} round(s) of {' / '.join(sides)}; "
          + "; ".join(f"{a.dtype} GEMM peak on {c} thread(s) {p:.0f} GFLOP/s" for c, p in peaks.items()), flush=True)

    for shape in shapes:
        vocab, _dim, _layers, _heads, _kv, _hidden, tied, batch, seq = SHAPES[shape]
        steps = a.steps or (3 if a.quick else DEFAULT_STEPS[shape])
        warmup = a.warmup if a.warmup is not None else (1 if a.quick else DEFAULT_WARMUP[shape])
        work = pathlib.Path(tempfile.mkdtemp(prefix=f"compare-torchtune-{shape}-"))
        checkpoint = work / "initial"
        write_initial_checkpoint(shape, a.dtype, checkpoint)
        print(f"== {shape}: {multiplied_params(shape) / 1e6:.1f}M multiplied parameters ({'tied' if tied else 'untied'}), "
              f"batch {batch} x {seq} per step, {steps} steps per run ({warmup} warm-up), "
              f"{flops_per_token(shape) / 1e6:.1f} MFLOP per token"
              + (", activation checkpointing" if shape == "1b" else ""), flush=True)
        if shape == "1b" and a.dtype == "fp32" and not a.optimizer_in_bwd:
            print("   1b in fp32 with AdamW's ordinary step needs about 22 GB per side: "
                  "--dtype bf16 or --optimizer-in-bwd on a smaller machine", flush=True)
        for ranks, threads in layouts:
            data = work / f"tokens_{ranks}x{threads}.jsonl"
            run = Run(shape, ranks, threads, a.dtype, steps, warmup, a.optimizer_in_bwd, data, checkpoint)
            random_token_data(data, samples=run.batch_per_rank * ranks * steps, seq_len=seq, vocab=vocab)
            results = {side: [] for side in sides}
            for pair in range(pairs):
                for side in sides:
                    if results[side] and not results[side][0]["ok"]:
                        continue  # a side that cannot run once is not tried again
                    if side == "fthost":
                        results[side].append(run_fthost(run))
                    else:
                        results[side].append(run_torchtune(run, compile_model=side == "torchtune compile"))
                print(f"{shape:>4} {ranks}x{threads} round {pair + 1}: "
                      + ", ".join(f"{side} {describe(results[side][pair if results[side][0]['ok'] else 0])}"
                                  for side in sides)
                      + f" (load {os.getloadavg()[0]:.1f})", flush=True)
            report(run, sides, results, peaks[ranks * threads])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
