#!/usr/bin/env python3
"""One training step of Llama 3.2 Vision at the 11B model's widths and reduced depth: torchtune's
own recipe against fthost on this CPU, on the same PyTorch. Not a test: prints medians and the ratio.

  .venv/bin/python bench/vision_step.py [--vision-layers 2] [--global-layers 1] [--text-layers 2]
      [--batch-size 2] [--steps 6] [--repeats 2] [--threads 2] [--work /tmp/vision_step] [--tiny]

The model: the 11B's widths (vision: hidden 1280, 16 heads, MLP 5120, tiles of 560 px, patches of
14, at most 4 tiles, intermediate_layers_indices [0] so vision_output_dim 2560; text: hidden 4096,
32 heads, 8 KV heads, MLP 14336, vocabulary 128256 + 8 fusion rows, untied output, RoPE base
500000 with Llama 3's scaling as the 11B config.json) at reduced depth: --vision-layers local and
--global-layers global vision layers, --text-layers self-attention layers and one cross-attention
layer just before the last of them (Hugging Face's index text_layers - 1, counted in its
num_hidden_layers: index 1 for the default 2). --tiny shrinks every width (vision hidden 64,
text hidden 64, tiles of 28 px; the vocabulary stays 128256, which the tokenizer's special tokens
and the image token 128256 need) for a functional check.

Written once into --work (reused while its shape.json matches): seeded images (Pillow, JPEG
quality 90, 1000x900 and kin, each a 2x2 canvas of 4 tiles at 560 px; scaled with the tile for
--tiny), data.json (batch-size x steps ShareGPT samples, one image each, short texts), and a
random Hugging Face MllamaForConditionalGeneration (transformers' initialisation, seed 0, every
scalar gate set to 0.1 so the images reach the loss from the first step) saved in bfloat16 under
the published key layout (vision_model.*, multi_modal_projector.*, language_model.model.*,
language_model.lm_head.weight) with its config.json. Both sides load it through
FullModelHFCheckpointer (model_type LLAMA3_VISION), read the same data with torchtune's
multimodal_chat_dataset / llama3_2_vision_transform (tiktoken_small.model) and
padded_collate_tiled_images_and_mask in order (shuffle off), and train bf16 with torchtune's
llama3_2_vision_11b split (decoder_trainable False, encoder_trainable True, fusion_trainable True),
CEWithChunkedOutputLoss, AdamW (lr 2e-5, betas 0.9 / 0.999, eps 1e-8, weight decay 0.01), no
clipping, no schedule, no activation checkpointing, no compile, num_workers 0, one micro-batch of
--batch-size per step, --steps steps (one epoch), then each saves its final checkpoint (outside
the steps; deleted after the run).

- torchtune: recipes/full_finetune_distributed.py as torchtune 0.6.1 ships it (found with
  importlib.util.find_spec("recipes")), launched by `torchrun --standalone --nproc_per_node 1`
  (gloo: the recipe's get_distributed_backend("cpu"); one rank, so no FSDP: the recipe shards
  only when data_parallel_dim > 1), device cpu, dtype bf16. On a CPU the recipe calls three CUDA
  memory functions unconditionally (get_memory_stats raises on a CPU device): the launcher stubs
  training.get_memory_stats, log_memory_stats and cleanup_before_training, and changes nothing
  else. Its model is DeepFusionModel(llama3_2_vision_decoder(...), llama3_2_vision_encoder(...))
  with the sizes above; torchtune's config.instantiate does not build nested _component_ entries,
  so a two-line builder in --work's vision_step_torchtune.py composes them (on PYTHONPATH).
  Step seconds: the recipe's own `time_per_step`, from which it logs tokens_per_second_per_gpu:
  the metric logger (a DiskLogger subclass in the same module) reads it, and the step's
  `num_tokens`, from the recipe's frame. It runs from the end of the previous step's logging
  (for step 1: from before the epoch's DataLoader is made) through the batch (dataset: image decode
  and CLIP tiling; collate), forward, the loss, backward, two gloo all-reduces, scale_grads, the
  AdamW step, zero_grad and the loss's .item().
- fthost: build/bin/fthost --config run.toml (model fthost.models.llama3_2_vision.from_hf_config on
  the same directory), num_threads = --threads. Step seconds: num_tokens / tokens_per_second_per_gpu
  of its DiskLogger (jsonl, world size 1): its train_step from the batch (the same decode, tiling
  and collate, made in the step as num_workers = 0) through forward, backward, the all-reduce of
  the step's totals and the optimizer step; logging and checkpointing are outside it.
Both count the targets after the label shift (torchtune counts before it, the same number here:
each sample's first label is masked), and report the number the steps are compared on.

Runs alternate (torchtune, fthost, torchtune, ...) --repeats times, each in a fresh process with
OMP_NUM_THREADS = --threads, OMP_WAIT_POLICY=PASSIVE; each run's first step is dropped (warm-up);
printed per side: the median step seconds over the remaining steps of all its runs, the median of
the per-round ratios torchtune / fthost, the first step's loss (the two models are the same
weights but not the same computation: Hugging Face's vision encoder pads each tile's 1601 tokens
to 1608 and its tiles attend to the padding tiles, torchtune's does neither), and the peak RSS of
the whole run (wait4's ru_maxrss: the largest process, checkpoint load and save included). Run
nothing else beside it (`uptime` is printed first).
"""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

from recipe_step_runs import STEP_DISK_LOGGER, RunFailed, launch, read_disk_log, summarise, tail, thread_env

ROOT = pathlib.Path(__file__).resolve().parent.parent
FTHOST = ROOT / "build" / "bin" / "fthost"
SYSTEM_PYTHON = str(ROOT / ".venv" / "bin" / "python")  # torch 2.13, torchtune 0.6.1, transformers
FIXTURES = pathlib.Path(os.environ.get("FT_FIXTURES") or ROOT.parent / "shared" / "fixtures")
TOKENIZER = FIXTURES / "torchtune_assets" / "tiktoken_small.model"
LR, BETAS, EPS, WEIGHT_DECAY = 2e-5, (0.9, 0.999), 1e-8, 0.01
VOCAB, FUSION_ROWS, IMAGE_TOKEN, PAD_TOKEN = 128256, 8, 128256, 128004
MAX_SEQ_LEN = 512            # the tokenizer's; the samples are far shorter
ROPE_MAX_SEQ_LEN = 131072    # the 11B's max_position_embeddings (torchtune's max_seq_len)
ENCODER_MAX_SEQ_LEN = 128080  # llama3_2_vision_11b's (KV caches only)
GATE = 0.1
RUN_TIMEOUT_S = 4 * 3600
# Hugging Face's module names (transformers >= 4.52) -> the published checkpoint's keys.
KEY_PREFIXES = [("model.vision_model.", "vision_model."), ("model.multi_modal_projector.", "multi_modal_projector."),
                ("model.language_model.", "language_model.model."), ("lm_head.", "language_model.lm_head.")]
# (width, height) at 560-px tiles: each fits a 2x2 canvas (1120x1120) best, so 4 tiles per image.
IMAGE_SIZES = [(1000, 900), (900, 1000), (1100, 1000), (960, 960)]
CONVERSATIONS = [
    ("<image> What colour is the square?", "The square is red."),
    ("Look at this: <image> what is in it?", "Stripes on a grey field."),
    ("<image>Describe the picture.", "Green and blue gradients with noise."),
    ("Is this <image> tall or wide?", "It is nearly square."),
]


def shape(a) -> dict:
    if a.tiny:
        v = {"hidden": 64, "heads": 4, "intermediate": 256, "tile": 28}
        t = {"hidden": 64, "heads": 4, "kv_heads": 2, "intermediate": 128}
    else:
        v = {"hidden": 1280, "heads": 16, "intermediate": 5120, "tile": 560}
        t = {"hidden": 4096, "heads": 32, "kv_heads": 8, "intermediate": 14336}
    indices = [0, 1] if a.intermediate_layers == 2 else [0]
    if max(indices) >= a.vision_layers:
        sys.exit(f"--intermediate-layers {a.intermediate_layers} needs at least {max(indices) + 1} --vision-layers")
    v.update(patch=14, max_tiles=4, layers=a.vision_layers, global_layers=a.global_layers, indices=indices,
             output_dim=v["hidden"] * (1 + len(indices)))
    t.update(vocab=VOCAB, layers=a.text_layers, cross=[a.text_layers - 1])  # HF index: before the last self layer
    return {"tiny": a.tiny, "vision": v, "text": t, "batch_size": a.batch_size, "steps": a.steps}


# --------------------------------------------------------------------------------------------
# The work directory: images, data.json, the checkpoint (worker process, .venv's python)
# --------------------------------------------------------------------------------------------
def write_images(directory: pathlib.Path, count: int, tile: int) -> list:
    import numpy as np
    from PIL import Image
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    names = []
    for i in range(count):
        width, height = (max(1, round(d * tile / 560)) for d in IMAGE_SIZES[i % len(IMAGE_SIZES)])
        y, x = np.mgrid[0:height, 0:width]
        base = np.stack([(x * (i + 1)) % 256, (y * 3 + i) % 256, ((x + y) // 2) % 256], -1)
        pixels = np.clip(base + rng.integers(-30, 31, size=(height, width, 3)), 0, 255).astype(np.uint8)
        names.append(f"{i:04d}.jpg")
        Image.fromarray(pixels).save(directory / names[-1], quality=90)
    return names


def mllama_config(s: dict):
    import torch
    from transformers import MllamaConfig
    from transformers.models.mllama.configuration_mllama import MllamaTextConfig, MllamaVisionConfig
    v, t = s["vision"], s["text"]
    vision = MllamaVisionConfig(
        hidden_size=v["hidden"], num_attention_heads=v["heads"], num_hidden_layers=v["layers"],
        num_global_layers=v["global_layers"], intermediate_size=v["intermediate"], image_size=v["tile"],
        patch_size=v["patch"], max_num_tiles=v["max_tiles"], intermediate_layers_indices=v["indices"],
        vision_output_dim=v["output_dim"], norm_eps=1e-5, num_channels=3)
    text = MllamaTextConfig(
        vocab_size=t["vocab"], hidden_size=t["hidden"], num_attention_heads=t["heads"],
        num_key_value_heads=t["kv_heads"], num_hidden_layers=t["layers"] + len(t["cross"]),
        cross_attention_layers=t["cross"], intermediate_size=t["intermediate"], rope_theta=500000.0,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 8192},
        max_position_embeddings=ROPE_MAX_SEQ_LEN, rms_norm_eps=1e-5, tie_word_embeddings=False,
        pad_token_id=PAD_TOKEN, bos_token_id=128000, eos_token_id=[128001, 128008, 128009])
    config = MllamaConfig(vision_config=vision.to_dict(), text_config=text.to_dict(), image_token_index=IMAGE_TOKEN)
    config.dtype = torch.bfloat16
    return config


def trainable(key: str, cross: list) -> bool:
    """torchtune's llama3_2_vision_11b split (tests/vision_references/make_vision_golden.py's
    trainability): the vision side and the cross-attention layers; of the embedding only the 8
    fusion rows (counted by the caller)."""
    if key.startswith(("vision_model.", "multi_modal_projector.")):
        return True
    if key.startswith("language_model.model.layers."):
        return int(key.split(".")[3]) in cross
    return False


def worker_make(s: dict, work: pathlib.Path) -> None:
    import torch
    from safetensors.torch import save_file
    from transformers import MllamaForConditionalGeneration
    n = s["batch_size"] * s["steps"]
    names = write_images(work / "images", n, s["vision"]["tile"])
    data = [{"image": name, "conversations": [{"from": "human", "value": CONVERSATIONS[i % len(CONVERSATIONS)][0]},
                                              {"from": "gpt", "value": CONVERSATIONS[i % len(CONVERSATIONS)][1]}]}
            for i, name in enumerate(names)]
    (work / "data.json").write_text(json.dumps(data, indent=1) + "\n")

    config = mllama_config(s)
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)  # built in bfloat16: never a float32 copy of the embeddings
    model = MllamaForConditionalGeneration(config)
    torch.set_default_dtype(torch.float32)
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() == 1:
                p.fill_(GATE)  # transformers zeroes the gates: no image would reach the loss at first
    model_dir = work / "model"
    model_dir.mkdir(exist_ok=True)
    state = {}
    for name, p in model.named_parameters():
        hits = [new + name[len(old):] for old, new in KEY_PREFIXES if name.startswith(old)]
        if len(hits) != 1:
            raise SystemExit(f"{name}: {len(hits)} published prefixes match")
        state[hits[0]] = p.detach().to(torch.bfloat16).contiguous()
    save_file(state, str(model_dir / "model.safetensors"), metadata={"format": "pt"})
    config.save_pretrained(model_dir)
    total = sum(t.numel() for t in state.values())
    train = sum(t.numel() for k, t in state.items() if trainable(k, s["text"]["cross"]))
    train += FUSION_ROWS * s["text"]["hidden"]
    embed = 2 * VOCAB * s["text"]["hidden"]
    print(json.dumps({"params": total, "trainable": train, "embedding_and_output": embed,
                      "bytes": (model_dir / "model.safetensors").stat().st_size}))


def prepare(a, s: dict, work: pathlib.Path) -> dict:
    marker = work / "shape.json"
    if marker.exists() and json.loads(marker.read_text()).get("shape") == s:
        return json.loads(marker.read_text())["counts"]
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    args = [SYSTEM_PYTHON, str(pathlib.Path(__file__).resolve()), "--worker", "--work", str(work),
            "--vision-layers", str(a.vision_layers), "--global-layers", str(a.global_layers),
            "--intermediate-layers", str(a.intermediate_layers), "--text-layers", str(a.text_layers),
            "--batch-size", str(a.batch_size), "--steps", str(a.steps)] + (["--tiny"] if a.tiny else [])
    made = subprocess.run(args, env=thread_env(a.threads), capture_output=True, text=True)
    if made.returncode != 0:
        sys.exit(f"writing the work directory failed ({made.returncode}):\n{tail(made.stderr)}")
    counts = json.loads(made.stdout.strip().splitlines()[-1])
    marker.write_text(json.dumps({"shape": s, "counts": counts}, indent=1) + "\n")
    return counts


# --------------------------------------------------------------------------------------------
# torchtune's side
# --------------------------------------------------------------------------------------------
TORCHTUNE_MODULE = '''"""vision_step.py's torchtune parts: the model builder (config.instantiate does not build nested
_component_ entries) and a DiskLogger that also writes the recipe's own step seconds."""
import os
import sys

from torchtune.models.llama3_2_vision import llama3_2_vision_decoder, llama3_2_vision_encoder
from torchtune.modules.model_fusion import DeepFusionModel
from torchtune.training.metric_logging import DiskLogger


def deep_fusion(encoder, decoder, decoder_trainable, encoder_trainable, fusion_trainable):
    return DeepFusionModel(decoder=llama3_2_vision_decoder(**decoder), encoder=llama3_2_vision_encoder(**encoder),
                           decoder_trainable=decoder_trainable, encoder_trainable=encoder_trainable,
                           fusion_trainable=fusion_trainable)


''' + STEP_DISK_LOGGER

TORCHTUNE_LAUNCHER = '''import importlib.util, pathlib, runpy, sys
import torchtune.training
# On a CPU the recipe calls these CUDA memory functions unconditionally (get_memory_stats raises).
torchtune.training.get_memory_stats = lambda device, reset_stats=True: {}
torchtune.training.log_memory_stats = lambda stats, message="": None
torchtune.training.cleanup_before_training = lambda: None
spec = importlib.util.find_spec("recipes")
recipe = pathlib.Path(spec.origin).parent / "full_finetune_distributed.py"
sys.argv = ["full_finetune_distributed", "--config", sys.argv[1]]
runpy.run_path(str(recipe), run_name="__main__")
'''


def torchtune_config(s: dict, work: pathlib.Path, out: pathlib.Path) -> dict:
    v, t = s["vision"], s["text"]
    layers = t["layers"]
    encoder = {"patch_size": v["patch"], "num_heads": v["heads"], "clip_embed_dim": v["hidden"],
               "clip_num_layers": v["layers"], "clip_hidden_states": v["indices"],
               "num_layers_projection": v["global_layers"], "decoder_embed_dim": t["hidden"], "tile_size": v["tile"],
               "max_num_tiles": v["max_tiles"], "in_channels": 3}
    # torchtune fuses a cross-attention layer ahead of self-attention layer idx (1-based) when
    # idx % fusion_interval == 0: with fusion_interval = layers, one, ahead of the last, as
    # Hugging Face's cross_attention_layers [layers - 1] (torchtune's conversion maps it so).
    decoder = {"vocab_size": t["vocab"], "num_layers": layers, "fusion_interval": layers,
               "num_special_tokens": FUSION_ROWS, "num_heads": t["heads"], "num_kv_heads": t["kv_heads"],
               "embed_dim": t["hidden"], "max_seq_len": ROPE_MAX_SEQ_LEN, "encoder_max_seq_len": ENCODER_MAX_SEQ_LEN,
               "rope_base": 500000, "intermediate_dim": t["intermediate"]}
    return {
        "output_dir": str(out), "seed": 0, "shuffle": False, "epochs": 1, "max_steps_per_epoch": s["steps"],
        "batch_size": s["batch_size"], "gradient_accumulation_steps": 1, "clip_grad_norm": None, "compile": False,
        "optimizer_in_bwd": False, "device": "cpu", "dtype": "bf16", "resume_from_checkpoint": False,
        "enable_activation_checkpointing": False, "enable_activation_offloading": False, "log_every_n_steps": 1,
        "log_peak_memory_stats": False, "collate_fn": "torchtune.data.padded_collate_tiled_images_and_mask",
        "model": {"_component_": "vision_step_torchtune.deep_fusion", "encoder": encoder, "decoder": decoder,
                  "decoder_trainable": False, "encoder_trainable": True, "fusion_trainable": True},
        "tokenizer": {"_component_": "torchtune.models.llama3_2_vision.llama3_2_vision_transform",
                      "path": str(TOKENIZER), "image_size": v["tile"], "max_seq_len": MAX_SEQ_LEN},
        "dataset": {"_component_": "torchtune.datasets.multimodal.multimodal_chat_dataset", "source": "json",
                    "data_files": str(work / "data.json"), "split": "train", "image_dir": str(work / "images"),
                    "image_tag": "<image>"},
        "checkpointer": {"_component_": "torchtune.training.FullModelHFCheckpointer",
                         "checkpoint_dir": str(work / "model"), "checkpoint_files": ["model.safetensors"],
                         "recipe_checkpoint": None, "output_dir": str(out), "model_type": "LLAMA3_VISION"},
        "optimizer": {"_component_": "torch.optim.AdamW", "lr": LR, "betas": list(BETAS), "eps": EPS,
                      "weight_decay": WEIGHT_DECAY},
        "loss": {"_component_": "torchtune.modules.loss.CEWithChunkedOutputLoss"},
        "metric_logger": {"_component_": "vision_step_torchtune.StepDiskLogger", "log_dir": str(out / "logs"),
                          "filename": "metrics.txt"},
        "profiler": {"_component_": "torchtune.training.setup_torch_profiler", "enabled": False},
    }


# --------------------------------------------------------------------------------------------
# fthost's side
# --------------------------------------------------------------------------------------------
def fthost_config(s: dict, work: pathlib.Path, out: pathlib.Path, threads: int) -> str:
    return f'''output_dir = "{out}"
seed = 0
epochs = 1
max_steps_per_epoch = {s["steps"]}
batch_size = {s["batch_size"]}
gradient_accumulation_steps = 1
shuffle = false
dtype = "bf16"
num_threads = {threads}
enable_activation_checkpointing = false
collate_fn = "torchtune.data.padded_collate_tiled_images_and_mask"
log_every_n_steps = 1
log_peak_memory_stats = true

[model]
_component_ = "fthost.models.llama3_2_vision.from_hf_config"
path = "{work / "model"}"
decoder_trainable = false
encoder_trainable = true
fusion_trainable = true

[tokenizer]
_component_ = "torchtune.models.llama3_2_vision.llama3_2_vision_transform"
path = "{TOKENIZER}"
max_seq_len = {MAX_SEQ_LEN}
image_size = {s["vision"]["tile"]}

[checkpointer]
_component_ = "torchtune.training.FullModelHFCheckpointer"
checkpoint_dir = "{work / "model"}"
checkpoint_files = ["model.safetensors"]
model_type = "LLAMA3_VISION"
output_dir = "{out}"

[dataset]
_component_ = "torchtune.datasets.multimodal.multimodal_chat_dataset"
source = "json"
data_files = "{work / "data.json"}"
image_dir = "{work / "images"}"
image_tag = "<image>"

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
log_dir = "{out / "logs"}"
filename = "metrics.jsonl"
output_fmt = "jsonl"
'''


# --------------------------------------------------------------------------------------------
# One run
# --------------------------------------------------------------------------------------------
def run_torchtune(s: dict, work: pathlib.Path, threads: int, index: int) -> dict:
    out = work / f"torchtune-{index}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    (work / "vision_step_torchtune.py").write_text(TORCHTUNE_MODULE)
    (work / "torchtune_launcher.py").write_text(TORCHTUNE_LAUNCHER)
    config = out / "torchtune.yaml"
    config.write_text(json.dumps(torchtune_config(s, work, out), indent=1))  # YAML is JSON's superset
    env = thread_env(threads, str(work))
    env["HF_DATASETS_CACHE"] = str(work / "hf_datasets")
    command = [SYSTEM_PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1",
               str(work / "torchtune_launcher.py"), str(config)]
    try:
        run = launch(command, env, work / f"torchtune-{index}.log")
        rows = read_disk_log(out / "logs" / "metrics.txt")
        for r in rows:
            r["tokens_per_second_per_gpu"] = r["num_tokens"] / r["step_seconds"]
        (work / f"torchtune-{index}.metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    finally:
        shutil.rmtree(out, ignore_errors=True)  # its final checkpoint: the model's size
    return summarise(rows, run)


def run_fthost(s: dict, work: pathlib.Path, threads: int, index: int) -> dict:
    if not FTHOST.exists():
        raise RunFailed(f"{FTHOST} is missing (build it first)")
    out = work / f"fthost-{index}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    config = out / "run.toml"
    config.write_text(fthost_config(s, work, out, threads))
    try:
        run = launch([str(FTHOST), "--config", str(config)], thread_env(threads), work / f"fthost-{index}.log")
        text = (out / "logs" / "metrics.jsonl").read_text()
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        for r in rows:
            r["step_seconds"] = r["num_tokens"] / r["tokens_per_second_per_gpu"]  # world size 1
        (work / f"fthost-{index}.metrics.jsonl").write_text(text)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return summarise(rows, run)


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------
SIDES = {"torchtune": run_torchtune, "fthost": run_fthost}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vision-layers", type=int, default=2, help="local vision layers (the 11B: 32)")
    parser.add_argument("--global-layers", type=int, default=1, help="global vision layers (the 11B: 8)")
    parser.add_argument("--intermediate-layers", type=int, choices=[1, 2], default=1,
                        help="intermediate_layers_indices [0] or [0, 1] (the 11B: 5 of them)")
    parser.add_argument("--text-layers", type=int, default=2,
                        help="self-attention text layers; one cross-attention layer is added before the last")
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6, help="optimizer steps per run, the first a warm-up")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--work", type=pathlib.Path, default=pathlib.Path("/tmp/vision_step"))
    parser.add_argument("--tiny", action="store_true", help="every width shrunk (hidden 64, tiles of 28 px)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.text_layers < 1 or a.vision_layers < 1 or a.global_layers < 0 or a.steps < 2:
        parser.error("need --text-layers >= 1, --vision-layers >= 1, --global-layers >= 0 and --steps >= 2")
    s = shape(a)
    work = a.work.resolve()
    if a.worker:
        return worker_make(s, work)

    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"uptime at start: {uptime}", flush=True)
    if not TOKENIZER.exists():
        sys.exit(f"{TOKENIZER} is missing (set FT_FIXTURES)")
    v, t = s["vision"], s["text"]
    print(f"{os.cpu_count()} cores; {a.threads} threads per run (OMP_NUM_THREADS, OMP_WAIT_POLICY=PASSIVE / "
          f"num_threads); {a.repeats} round(s) of torchtune, fthost; {a.steps} steps of batch {a.batch_size} per run, "
          f"the first dropped; bf16, AdamW lr {LR}", flush=True)
    print(f"model{' (--tiny)' if a.tiny else ' (the 11B widths)'}: vision hidden {v['hidden']}, {v['heads']} heads, "
          f"MLP {v['intermediate']}, {v['layers']} local + {v['global_layers']} global layers, intermediate layers "
          f"{v['indices']}, tiles of {v['tile']} px (4 per image); text hidden {t['hidden']}, {t['heads']} / "
          f"{t['kv_heads']} KV heads, MLP {t['intermediate']}, {t['layers']} self-attention layers + cross-attention "
          f"at Hugging Face index {t['cross']}, vocab {t['vocab']}", flush=True)
    start = time.perf_counter()
    counts = prepare(a, s, work)
    print(f"  {counts['params'] / 1e6:.1f} M parameters ({counts['embedding_and_output'] / 1e6:.1f} M the embedding "
          f"and output), {counts['trainable'] / 1e6:.1f} M trainable; checkpoint {counts['bytes'] / 2**30:.2f} GiB in "
          f"{work} (ready after {time.perf_counter() - start:.0f} s)", flush=True)

    results = {side: [] for side in SIDES}
    failed = {}
    for rnd in range(a.repeats):
        for side, run in SIDES.items():
            if side in failed:
                continue
            try:
                r = run(s, work, a.threads, rnd)
            except (RunFailed, subprocess.TimeoutExpired) as e:
                failed[side] = str(e)
                print(f"round {rnd + 1} {side:9s} FAILED: {e}", flush=True)
                continue
            results[side].append(r)
            print(f"round {rnd + 1} {side:9s} steps {' '.join(f'{x:.2f}' for x in r['seconds'])} s; "
                  f"losses {' '.join(f'{x:.4f}' for x in r['losses'][:3])}; tokens {r['tokens'][:3]}; "
                  f"peak RSS {r['peak_rss_gib']:.2f} GiB; wall {r['wall_s']:.0f} s", flush=True)

    print()
    print(f"{'side':10s} {'step s (median)':>15s} {'steps':>6s} {'loss step 1':>12s} {'tokens step 1':>14s} "
          f"{'peak RSS GiB':>13s} {'run wall s':>11s}")
    medians = {}
    for side in SIDES:
        if not results[side]:
            print(f"{side:10s} {'failed':>15s}")
            continue
        steady = [x for r in results[side] for x in r["seconds"][1:]]
        medians[side] = statistics.median(steady)
        first = results[side][0]
        print(f"{side:10s} {medians[side]:15.3f} {len(steady):6d} {first['losses'][0]:12.4f} {first['tokens'][0]:14d} "
              f"{statistics.median(r['peak_rss_gib'] for r in results[side]):13.2f} "
              f"{statistics.median(r['wall_s'] for r in results[side]):11.0f}")
    if len(medians) == 2:
        pairs = [statistics.median(tt["seconds"][1:]) / statistics.median(ft["seconds"][1:])
                 for tt, ft in zip(results["torchtune"], results["fthost"])]
        print(f"torchtune / fthost step time: {medians['torchtune'] / medians['fthost']:.2f} (ratio of the medians); "
              f"per round {', '.join(f'{p:.2f}' for p in pairs)}")
        if results["torchtune"][0]["tokens"] != results["fthost"][0]["tokens"]:
            print(f"note: the sides count different tokens per step: torchtune {results['torchtune'][0]['tokens']}, "
                  f"fthost {results['fthost'][0]['tokens']}")
    print(f"logs and per-step metrics: {work}/{{torchtune,fthost}}-N.log / .metrics.jsonl")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
