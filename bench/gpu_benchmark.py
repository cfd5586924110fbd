#!/usr/bin/env python3
"""GPU benchmark (not a test): the Llama-3.2-1B shape in bfloat16, sequence 2048, the largest
batch that fits, on one CUDA device. Prints tokens/s (median over steps, the first two dropped),
MFU and the CUDA allocator's peak, and writes them to REPORT/gpu_benchmark.json.

  python3 bench/gpu_benchmark.py --fthost build-gpu/bin/fthost --report DIR [--steps 8]
                                 [--fixtures DIR] [--device cuda|cpu] [--tiny]

Then torchtune's own recipe (full_finetune_distributed, `tune run`) trains the same model, from
the checkpoint fthost's run saved, at the same batch, sequence, dtype and optimizer, on packed
tinyshakespeare (its tokens are what torchtune's data pipeline gives; the step's work depends
only on the shapes), when torchtune is installed. `--tiny --device cpu` runs the whole flow on a
small model here, to check it before a GPU machine's time is spent on it.

MFU counts FLOPs as torchtitan does: 6 x the non-embedding parameters, plus 12 x layers x heads x
head_dim x sequence for attention, per token; the peak is the H200's dense bfloat16 989 TFLOP/s
(--peak-tflops for another device).
"""
import argparse
import json
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from run import random_token_data  # noqa: E402

# torchtune.models.llama3_2.llama3_2_1b
VOCAB, DIM, LAYERS, HEADS, KV_HEADS, HIDDEN = 128256, 2048, 16, 32, 8, 8192
HEAD_DIM = DIM // HEADS


def flops_per_token(seq: int) -> float:
    attention = DIM * (HEADS * HEAD_DIM) * 2 + DIM * (KV_HEADS * HEAD_DIM) * 2
    mlp = 3 * DIM * HIDDEN
    non_embedding = LAYERS * (attention + mlp + 2 * DIM) + DIM
    return 6 * non_embedding + 12 * LAYERS * HEADS * HEAD_DIM * seq


# --tiny: the same architecture, small enough for a CPU (the vocabulary stays Llama 3's).
TINY = {"vocab_size": VOCAB, "num_layers": 2, "num_heads": 4, "num_kv_heads": 2, "embed_dim": 64,
        "max_seq_len": 2048, "intermediate_dim": 128}


def tiny_hf_config(path: pathlib.Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
        "vocab_size": TINY["vocab_size"], "hidden_size": TINY["embed_dim"], "intermediate_size": TINY["intermediate_dim"],
        "num_hidden_layers": TINY["num_layers"], "num_attention_heads": TINY["num_heads"],
        "num_key_value_heads": TINY["num_kv_heads"], "max_position_embeddings": TINY["max_seq_len"],
        "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": True,
        "rope_scaling": {"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"}}))


def run_fthost(fthost: pathlib.Path, data: pathlib.Path, batch: int, steps: int, extra: list,
               device: str = "cuda", model: list = (), keep: pathlib.Path = None) -> dict:
    out = keep or pathlib.Path(tempfile.mkdtemp(prefix="fthost-gpu-bench-"))
    model = list(model) or ["model._component_=torchtune.models.llama3_2.llama3_2_1b"]
    args = [str(fthost), "--config", str(ROOT / "bench" / "configs" / "llama_125m.toml"), f"output_dir={out}",
            "~model", *model, f"dataset.source={data}",
            f"batch_size={batch}", f"max_steps_per_epoch={steps}", "epochs=1", f"device={device}", "dtype=bf16",
            "num_threads=8",
            "metric_logger._component_=torchtune.training.metric_logging.DiskLogger",
            f"metric_logger.log_dir={out}/logs", "metric_logger.filename=metrics.jsonl",
            "metric_logger.output_fmt=jsonl", "log_every_n_steps=1", "log_peak_memory_stats=true"] + extra
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    try:
        if proc.returncode != 0:
            return {"ok": False, "batch": batch, "wall_s": wall,
                    "tail": "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-4:])}
        rows = [json.loads(l) for l in (out / "logs" / "metrics.jsonl").read_text().splitlines() if l.strip()]
        steady = rows[2:] or rows
        return {"ok": True, "batch": batch, "wall_s": wall,
                "tokens_per_s": statistics.median(r["tokens_per_second_per_gpu"] for r in steady),
                "peak_active_gib": max(r.get("peak_memory_active", 0) for r in rows),
                "peak_reserved_gib": max(r.get("peak_memory_reserved", 0) for r in rows),
                "losses": [r["loss"] for r in rows]}
    finally:
        if keep is None:
            shutil.rmtree(out, ignore_errors=True)


def torchtune_config(out: pathlib.Path, checkpoint: pathlib.Path, fixtures: pathlib.Path, batch: int, steps: int,
                     seq: int, device: str, tiny: bool, fused: bool) -> pathlib.Path:
    """torchtune's recipe config for the same run (YAML is JSON's superset: written as JSON)."""
    if tiny:
        model = {"_component_": "torchtune.models.llama3_2.llama3_2", **TINY, "tie_word_embeddings": True}
    else:
        model = {"_component_": "torchtune.models.llama3_2.llama3_2_1b"}
    cfg = {
        "output_dir": str(out), "seed": 0, "shuffle": False, "epochs": 1, "max_steps_per_epoch": steps,
        "batch_size": batch, "gradient_accumulation_steps": 1, "clip_grad_norm": None, "compile": False,
        "optimizer_in_bwd": False, "device": device, "dtype": "bf16", "resume_from_checkpoint": False,
        "enable_activation_checkpointing": False, "enable_activation_offloading": False,
        "log_every_n_steps": 1, "log_peak_memory_stats": device != "cpu",  # torchtune refuses it on CPU
        "tokenizer": {"_component_": "torchtune.models.llama3.llama3_tokenizer",
                      "path": str(fixtures / "torchtune_assets" / "tiktoken_small.model"), "max_seq_len": seq},
        "dataset": {"_component_": "torchtune.datasets.text_completion_dataset", "source": "text",
                    "data_files": str(fixtures / "data" / "tinyshakespeare.txt"), "column": "text",
                    "split": "train", "packed": True},
        "model": model,
        "checkpointer": {"_component_": "torchtune.training.FullModelHFCheckpointer", "checkpoint_dir": str(checkpoint),
                         "checkpoint_files": ["model.safetensors"], "recipe_checkpoint": None,
                         "output_dir": str(out), "model_type": "LLAMA3_2"},
        "optimizer": {"_component_": "torch.optim.AdamW", "lr": 2e-5, "fused": fused},
        "loss": {"_component_": "torchtune.modules.loss.CEWithChunkedOutputLoss"},
        "metric_logger": {"_component_": "torchtune.training.metric_logging.DiskLogger", "log_dir": str(out / "logs"),
                          "filename": "metrics.txt"},
        "profiler": {"_component_": "torchtune.training.setup_torch_profiler", "enabled": False},
    }
    path = out / "torchtune.yaml"
    path.write_text(json.dumps(cfg, indent=1))
    return path


# torchtune 0.6's recipe logs CUDA memory statistics after building the model whatever
# log_peak_memory_stats says, which raises on a CPU: for the CPU check only, its recipe runs with
# that call returning nothing, as one process unless a launcher set torchrun's variables
# (bench/compare_torchtune.py starts several ranks that way).
CPU_RECIPE = """
import importlib.util, os, pathlib, runpy, sys
import torchtune.training
torchtune.training.get_memory_stats = lambda device, reset_stats=True: {}
torchtune.training.log_memory_stats = lambda stats, message="": None
torchtune.training.cleanup_before_training = lambda: None
recipe = pathlib.Path(importlib.util.find_spec("torchtune").origin).parent.parent / "recipes" / "full_finetune_distributed.py"
for name, value in dict(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                        MASTER_PORT=str(20000 + os.getpid() % 10000)).items():
    os.environ.setdefault(name, value)
sys.argv = ["full_finetune_distributed", "--config", sys.argv[1]]
runpy.run_path(str(recipe), run_name="__main__")
"""


def run_torchtune(tune: str, config: pathlib.Path, out: pathlib.Path, batch: int, seq: int, device: str) -> dict:
    """`tune run full_finetune_distributed` on one device; tokens/s from its DiskLogger's lines."""
    start = time.perf_counter()
    if device == "cpu":
        python = str(pathlib.Path(tune).parent / "python")
        command = [python, "-c", CPU_RECIPE, str(config)]
    else:
        command = [tune, "run", "--nproc_per_node", "1", "full_finetune_distributed", "--config", str(config)]
    proc = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    (out / "torchtune.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        return {"ok": False, "batch": batch, "wall_s": wall,
                "tail": "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-6:])}
    rows = []
    for log in sorted((out / "logs").glob("*.txt")):
        for line in log.read_text().splitlines():
            fields = dict(kv.split(":", 1) for kv in line.split(" ")[2:] if ":" in kv)  # "Step N | key:value ..."
            if fields:
                rows.append({k.strip(): float(v) for k, v in fields.items() if v.strip()})
    steady = rows[2:] or rows
    return {"ok": bool(rows), "batch": batch, "wall_s": wall,
            "tokens_per_s": statistics.median(r["tokens_per_second_per_gpu"] for r in steady) if rows else 0.0,
            "peak_active_gib": max((r.get("peak_memory_active", 0) for r in rows), default=0),
            "peak_reserved_gib": max((r.get("peak_memory_reserved", 0) for r in rows), default=0),
            "losses": [r["loss"] for r in rows], "tail": "" if rows else "no metrics logged"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fthost", required=True, type=pathlib.Path)
    ap.add_argument("--report", required=True, type=pathlib.Path)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--batches", default="16,8,4,2,1", help="tried largest first; the first that fits is measured")
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="a 2-layer model of the same architecture (a CPU check)")
    ap.add_argument("--fixtures", type=pathlib.Path, default=ROOT.parent / "shared" / "fixtures")
    args = ap.parse_args()
    data = pathlib.Path(tempfile.mkdtemp()) / "tokens.jsonl"
    batches = [int(b) for b in args.batches.split(",")]
    random_token_data(data, max(batches) * args.steps, args.seq, VOCAB)
    results = {"shape": "llama3_2_1b", "dtype": "bf16", "seq": args.seq, "flops_per_token": flops_per_token(args.seq),
               "peak_tflops": args.peak_tflops, "runs": []}
    device = args.device
    model = []
    if args.tiny:
        tiny_dir = pathlib.Path(tempfile.mkdtemp(prefix="fthost-tiny-"))
        tiny_hf_config(tiny_dir)
        model = ["model._component_=fthost.models.from_hf_config", f"model.path={tiny_dir}/config.json"]
    fitted = None
    checkpoint_root = pathlib.Path(tempfile.mkdtemp(prefix="fthost-gpu-bench-ckpt-"))

    def report(name, r):
        if not r["ok"]:
            print(f"{name:26s} batch {r['batch']:3d}: does not run ({r['wall_s']:.0f} s)\n    {r['tail']}", flush=True)
            return
        r["mfu"] = r["tokens_per_s"] * results["flops_per_token"] / (args.peak_tflops * 1e12)
        print(f"{name:26s} batch {r['batch']:3d}: {r['tokens_per_s']:9.0f} tokens/s  MFU {r['mfu']:.3f}  "
              f"peak {r['peak_active_gib']:.1f} GiB active / {r['peak_reserved_gib']:.1f} reserved  "
              f"loss {r['losses'][0]:.3f} -> {r['losses'][-1]:.3f}  ({r['wall_s']:.0f} s)", flush=True)

    for variant, extra in [("fthost fused AdamW", ["optimizer.fused=true"]), ("fthost", [])]:
        for batch in batches if fitted is None else [fitted]:
            keep = checkpoint_root if fitted is None else None
            r = run_fthost(args.fthost, data, batch, args.steps, extra, device, model, keep)
            r["variant"] = variant
            results["runs"].append(r)
            report(variant, r)
            if r["ok"]:
                fitted = batch
                break
    tune = shutil.which("tune")
    checkpoint = checkpoint_root / "epoch_0"
    if fitted is None:
        print("fthost ran at no batch size: nothing for torchtune to compare with")
    elif not tune:
        print("torchtune is not installed here (scripts/gpu_check.sh --wheels): fthost's figures only")
    elif not (checkpoint / "model.safetensors").exists():
        print(f"fthost's run left no checkpoint in {checkpoint}: torchtune's side skipped")
    else:
        for fused in (True, False):
            out = pathlib.Path(tempfile.mkdtemp(prefix="torchtune-gpu-bench-"))
            config = torchtune_config(out, checkpoint, args.fixtures, fitted, args.steps, args.seq, device, args.tiny,
                                      fused)
            r = run_torchtune(tune, config, out, fitted, args.seq, device)
            r["variant"] = f"torchtune{' fused AdamW' if fused else ''}"
            results["runs"].append(r)
            report(r["variant"], r)
        ours = {r["variant"]: r for r in results["runs"] if r.get("ok")}
        for a, b in [("fthost fused AdamW", "torchtune fused AdamW"), ("fthost", "torchtune")]:
            if a in ours and b in ours:
                print(f"{a} / {b}: tokens/s x{ours[a]['tokens_per_s'] / ours[b]['tokens_per_s']:.2f}, "
                      f"peak active {ours[a]['peak_active_gib']:.1f} vs {ours[b]['peak_active_gib']:.1f} GiB")
    shutil.rmtree(checkpoint_root, ignore_errors=True)
    args.report.mkdir(parents=True, exist_ok=True)
    (args.report / "gpu_benchmark.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
