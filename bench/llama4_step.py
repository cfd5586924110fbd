#!/usr/bin/env python3
"""One training step of Llama 4 Scout with images at Scout's widths and reduced depth: torchtune's
own recipe (its current source: no release has Llama 4) against fthost on this CPU, on the same
PyTorch. Not a test: prints medians and the ratio.

  .venv/bin/python bench/llama4_step.py [--text-layers 1] [--moe-every 1] [--experts 1]
      [--vision-layers 2] [--batch-size 2] [--steps 6] [--repeats 2] [--threads 2]
      [--work /tmp/llama4_step] [--tiny] [--fthost-fused] [--profile STEP]

The model: Scout's widths (text: hidden 5120, 40 heads / 8 KV heads of 128, routed experts of
8192 with a shared expert of 8192, top 1, sigmoid router, dense MLP 16384, vocabulary 202048,
untied output, RoPE base 500000 with Scout's llama3 scaling (factor 16, original length 8192),
max_position_embeddings 10485760; vision: hidden 1408, 16 heads, MLP 5632, tiles of 336 px in
14-px patches, pixel shuffle 0.5, adapter and projector 4096) at reduced depth: --text-layers
decoder layers, layer i a mixture of --experts routed experts (and the shared one) where
(i + 1) % --moe-every == 0 (Hugging Face's interleave_moe_layer_step and torchtune's
moe_every_n_layers mean the same; Scout: 1, every layer; a --moe-every above --text-layers makes
every layer dense), --vision-layers vision layers.

What fits: under Scout's split the decoder trains, so the 202048 x 5120 embedding and output
(2.07 G parameters) carry a bfloat16 gradient and two bfloat16 AdamW moments: 16.6 GB before any
layer. One Scout layer with its 16 experts (2.2 G parameters) would need 17.6 GB more; this
machine has 23.5 GiB. The default is therefore one text layer, a mixture of experts with 1 routed
expert of 8192 and the shared one (Scout's compute per token: top 1 of the routed experts plus the
shared expert; 1/16 of its routed parameters), and 2 vision layers: 2.49 G parameters, 2.44 G
trained, about 20 GB with the optimizer state. Even that does not fit torchtune's default CPU
AdamW (single-tensor: `exp_avg_sq.sqrt() / bias_correction2_sqrt` makes two temporaries the size
of the parameter, 4.1 GB on the embedding), so torchtune's optimizer is torch.optim.AdamW with
fused=True (torch's fused CPU kernel: the same update in one pass, no temporaries, and faster than
the default); fthost's is its default single-pass AdamW kernel.
Every text layer is one of Scout's NoPE layers (its layers 3, 7, ..., 47: global causal attention,
no RoPE, no QK norm; the query temperature tuning is 1 below position 8191): Scout's other layers
(RoPE, QK norm, attention in chunks of 8192) need flex attention in torchtune's code
(get_chunked_attention_mask raises "Local attention is only supported with flex attention" where
no CUDA device is found), so a CPU run of torchtune's recipe cannot build them.
--tiny shrinks every width (text hidden 64, vision hidden 32, tiles of 56 px; Scout's 16 experts;
the vocabulary stays 202048, which the tokenizer's ids need) for a functional check.

Written once into --work (reused while its shape.json matches): seeded JPEG images (Pillow,
quality 90, about 600 x 600: each a 2 x 2 canvas of 336-px tiles and the global thumbnail, 5
tiles, so 720 <|patch|> tokens; scaled with the tile for --tiny), cauldron.parquet
(batch-size x steps records in The Cauldron's layout, one image and one short turn each), a
random Hugging Face Llama4ForConditionalGeneration (transformers' initialisation, seed 0) saved in
bfloat16 under the published key layout (vision_model.*, multi_modal_projector.*,
language_model.model.*, language_model.lm_head.weight) with its config.json, and torchtune's
source (tests/vision_references/make_llama4_data_references.py's torchtune_source: the git
mirror's torchtune/, and recipes/full_finetune_distributed.py from the same commit). The worker
reads the records through torchtune's own the_cauldron_dataset and llama4_transform and checks
that every image gives the same number of tiles and <|patch|> tokens.

Both sides load the checkpoint through FullModelHFCheckpointer (model_type LLAMA4), read the same
records with the_cauldron_dataset / llama4_transform (Llama 4's tiktoken tokenizer.model,
image_size = the tile, max_num_tiles 16) in order (shuffle off), and train bf16 with
llama4_scout_17b_16e's split (decoder_trainable True, encoder_trainable False, fusion_trainable
True: the decoder, the vision adapter's pixel-shuffle MLP and the projector train; the vision
encoder is frozen; torchtune's count of trainable parameters is checked against it),
LinearCrossEntropyLoss (Scout's YAML: the output projection on the target positions only),
AdamW (lr 2e-5, betas 0.9 / 0.999, eps 1e-8, weight decay 0.01), no clipping, no schedule, no
activation checkpointing or offloading, no compile, num_workers 0, one micro-batch of
--batch-size per step, --steps steps (one epoch), then each saves its final checkpoint once
(outside the steps; deleted after the run).

- torchtune: recipes/full_finetune_distributed.py of that commit (printed), on the installed
  PyTorch, torchao and torchdata with make_llama4_data_references.py's import_torchtune (its
  source first on sys.path, the newer torchao NF4 names aliased), launched by `torchrun
  --standalone --nproc_per_node 1` (gloo, one rank: no FSDP). The recipe is run unchanged; the
  launcher (--work's torchtune_launcher.py) changes, before it runs:
  * as bench/vision_step.py: training.get_memory_stats, log_memory_stats and
    cleanup_before_training, the CUDA memory functions the recipe calls unconditionally, stubbed;
  * two more torchao names that torchtune.training.quantization imports and only its quantizers
    use (Int8DynamicActivationIntxWeightConfig, quantize_.workflows.Int4PackingFormat), given
    placeholders that raise if called;
  * torch.distributed.barrier: the recipe passes device_ids=[device.index], None on a CPU, which
    barrier refuses (TypeError); passed on without device ids;
  * torch.histc: TokenChoiceTopKRouter counts tokens per expert with histc of int64 indices,
    which only CUDA implements ("histogram_cpu" not implemented for 'Long'); counted in float32
    (bins of width 1: exact) and returned as int64.
  And in the config: the collate is llama4_step_torchtune.llama4_collate, torchtune's own
  padded_collate as its Llama 4 generation recipe (dev/generate_v2_distributed.py) uses it
  (tokens and labels padded right, all tiles concatenated in order: what Llama4VisionEncoder
  takes; no padding tiles), because padded_collate_tiled_images_and_mask cannot take Llama 4
  samples (the recipe hands it cp_degree, a TypeError; it wants an aspect_ratio that
  llama4_transform does not put in the sample, a KeyError; and it makes a 6-D image batch the
  Llama 4 encoder does not take); save_every_n_steps past the last step, so the model is saved
  once (the recipe otherwise saves the same final model twice). The model is
  EarlyFusionModel(llama4_decoder(...), {"vision": llama4_vision_encoder(...)}) as
  llama4_scout_17b_16e builds it, with the sizes above: config.instantiate does not build nested
  _component_ entries, so a builder in --work's llama4_step_torchtune.py composes them (on
  PYTHONPATH). On a CPU torchtune's GroupedExperts loops over the experts (torch._grouped_mm only
  on SM90). Step seconds: the recipe's own `time_per_step` (its tokens_per_second_per_gpu's), read
  with `num_tokens` from the recipe's frame by the metric logger (a DiskLogger subclass in the
  same module). It runs from the end of the previous step's logging (for step 1: from before the
  epoch's DataLoader is made) through the batch (image decode and tiling, collate), forward, the
  loss, backward, two gloo all-reduces, scale_grads, the AdamW step, zero_grad and the loss's
  .item().
- fthost: build/bin/fthost --config run.toml (model fthost.models.llama4.from_hf_config on the same
  directory, collate torchtune.data.padded_collate_tiled_images_and_mask, which for Llama 4 gives
  the model every image's real tiles in order), num_threads = --threads. Step seconds:
  num_tokens / tokens_per_second_per_gpu of its DiskLogger (jsonl, world size 1): its train_step
  from the batch (the same decode, tiling and collate, made in the step as num_workers = 0)
  through forward, backward, the all-reduce of the step's totals and the optimizer step.
Both count the targets after the label shift (torchtune's current SFTDataset shifts the labels,
fthost shifts in the step): the same number. Both encode exactly the images' tiles, so they
compute the same function (up to bfloat16 rounding and kernel order).

Runs alternate (torchtune, fthost, torchtune, ...) --repeats times, each in a fresh process with
OMP_NUM_THREADS = --threads, OMP_WAIT_POLICY=PASSIVE; each run's first step is dropped (warm-up);
printed per side: the median step seconds over the remaining steps of all its runs, the median of
the per-round ratios torchtune / fthost, the first step's loss, the peak RSS of the training
process by its last step (torchtune: VmHWM read by the logger; fthost: its peak_memory_rss), and
of the whole run (wait4's ru_maxrss: the largest process, checkpoint load and save included), and
per run its page faults and CPU seconds (wait4). --fthost-fused adds a third run to each round:
fthost with optimizer.fused = true (LibTorch's fused AdamW, the kernel torchtune runs here) instead
of its own single-pass kernel. --profile STEP times nothing: one run per side with the profiler
component (torchtune.training.setup_torch_profiler on both: CPU operators with their shapes)
recording optimizer step STEP alone, then each side's self time per operator
(bench/profile_summary.py) and its largest operators by input shape; the traces stay in --work.
Run nothing else beside it (`uptime` is printed first).
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
SYSTEM_PYTHON = str(ROOT / ".venv" / "bin" / "python")  # torch 2.13, transformers; torchtune from its source
REFERENCES = ROOT / "tests" / "vision_references"     # make_llama4_data_references.py: torchtune's source
TOKENIZER = ROOT / "build" / "tokenizer_fixtures" / "llama4" / "tokenizer.model"  # scripts/tokenizer_fixtures.py
MIRROR = pathlib.Path(os.environ.get("FT_TORCHTUNE_MIRROR", "/work/.mirror/pytorch+torchtune/repo"))
LR, BETAS, EPS, WEIGHT_DECAY = 2e-5, (0.9, 0.999), 1e-8, 0.01
MAX_NUM_TILES = 16                  # llama4_transform's default in Scout's YAML
MAX_SEQ_LEN = 4096                  # the transform's truncation; the samples are about 770 tokens
ROPE_MAX_SEQ_LEN = 10485760         # Scout's max_position_embeddings (llama4_scout_17b_16e's max_seq_len)
PATCH_TOKEN, BOI, EOI, PAD, BOS = 200092, 200080, 200081, 200018, 200000
EOS = [200001, 200007, 200008]
# (width, height) at 336-px tiles: each best fits a 2 x 2 canvas (672 x 672, the least upscaling),
# so 4 tiles and the thumbnail.
IMAGE_SIZES = [(600, 600), (640, 610), (610, 640), (650, 650)]
TURNS = [
    ("What colour is the square?", "The square is red."),
    ("What is in this picture?", "Stripes on a grey field."),
    ("Describe the picture.", "Green and blue gradients with noise."),
    ("Is this image tall or wide?", "It is nearly square."),
]


def shape(a) -> dict:
    if a.tiny:
        v = {"hidden": 32, "heads": 2, "intermediate": 128, "tile": 56, "projector": 48}
        t = {"hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 16, "expert": 32, "mlp": 128}
        experts = a.experts or 16
    else:
        v = {"hidden": 1408, "heads": 16, "intermediate": 5632, "tile": 336, "projector": 4096}
        t = {"hidden": 5120, "heads": 40, "kv_heads": 8, "head_dim": 128, "expert": 8192, "mlp": 16384}
        experts = a.experts or 1  # what fits beside the trainable 202048 x 5120 embedding and output (see above)
    v.update(patch=14, layers=a.vision_layers)
    moe = [i for i in range(a.text_layers) if (i + 1) % a.moe_every == 0]
    t.update(vocab=202048, layers=a.text_layers, moe_every=a.moe_every, moe_layers=moe, experts=experts)
    return {"tiny": a.tiny, "vision": v, "text": t, "batch_size": a.batch_size, "steps": a.steps}


# --------------------------------------------------------------------------------------------
# The work directory: images, cauldron.parquet, the checkpoint, torchtune's source (worker
# process, .venv's python)
# --------------------------------------------------------------------------------------------
def jpeg_images(count: int, tile: int) -> list:
    import io
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(0)
    images = []
    for i in range(count):
        width, height = (max(1, round(d * tile / 336)) for d in IMAGE_SIZES[i % len(IMAGE_SIZES)])
        y, x = np.mgrid[0:height, 0:width]
        base = np.stack([(x * (i + 1)) % 256, (y * 3 + i) % 256, ((x + y) // 2) % 256], -1)
        pixels = np.clip(base + rng.integers(-30, 31, size=(height, width, 3)), 0, 255).astype(np.uint8)
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="JPEG", quality=90)
        images.append(buffer.getvalue())
    return images


def write_cauldron(path: pathlib.Path, count: int, tile: int) -> None:
    """The Cauldron's layout (images inline, as its published parquet files hold them)."""
    import datasets
    from datasets import Features, Sequence, Value
    from datasets import Image as ImageFeature
    features = Features({"images": Sequence(ImageFeature()),
                         "texts": [{"user": Value("string"), "assistant": Value("string"), "source": Value("string")}]})
    images = [[{"bytes": b, "path": None}] for b in jpeg_images(count, tile)]
    texts = [[{"user": TURNS[i % len(TURNS)][0], "assistant": TURNS[i % len(TURNS)][1], "source": "bench"}]
             for i in range(count)]
    datasets.Dataset.from_dict({"images": images, "texts": texts}, features=features).to_parquet(str(path))


def llama4_config(s: dict):
    import torch
    from transformers import Llama4Config
    v, t = s["vision"], s["text"]
    text = dict(
        vocab_size=t["vocab"], hidden_size=t["hidden"], intermediate_size=t["expert"], intermediate_size_mlp=t["mlp"],
        num_hidden_layers=t["layers"], num_attention_heads=t["heads"], num_key_value_heads=t["kv_heads"],
        head_dim=t["head_dim"], hidden_act="silu", max_position_embeddings=ROPE_MAX_SEQ_LEN, rms_norm_eps=1e-5,
        rope_theta=500000.0, rope_scaling={"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                                           "high_freq_factor": 1.0, "original_max_position_embeddings": 8192},
        attention_dropout=0.0, num_local_experts=t["experts"], num_experts_per_tok=1,
        interleave_moe_layer_step=t["moe_every"], no_rope_layers=[0] * t["layers"], attention_chunk_size=8192,
        use_qk_norm=True, attn_temperature_tuning=True, floor_scale=8192, attn_scale=0.1, output_router_logits=False,
        router_aux_loss_coef=0.001, router_jitter_noise=0.0, tie_word_embeddings=False, bos_token_id=BOS,
        eos_token_id=EOS, pad_token_id=PAD)
    vision = dict(
        hidden_size=v["hidden"], num_hidden_layers=v["layers"], num_attention_heads=v["heads"],
        intermediate_size=v["intermediate"], num_channels=3, image_size=v["tile"], patch_size=v["patch"],
        pixel_shuffle_ratio=0.5, projector_input_dim=v["projector"], projector_output_dim=v["projector"],
        vision_output_dim=v["projector"], norm_eps=1e-5, rope_theta=10000, hidden_act="gelu", attention_dropout=0.0,
        projector_dropout=0.0, multi_modal_projector_bias=False, vision_feature_layer=-1,
        vision_feature_select_strategy="default")
    config = Llama4Config(text_config=text, vision_config=vision, boi_token_index=BOI, eoi_token_index=EOI,
                          image_token_index=PATCH_TOKEN, tie_word_embeddings=False)
    config.dtype = torch.bfloat16
    if config.text_config.moe_layers != t["moe_layers"]:
        raise SystemExit(f"transformers puts the mixtures of experts at {config.text_config.moe_layers}, "
                         f"expected {t['moe_layers']}")
    return config


def extract_torchtune(work: pathlib.Path) -> dict:
    """torchtune's source as make_llama4_data_references.py finds it (torchtune/), and the recipe
    beside it (recipes/full_finetune_distributed.py) from the same place."""
    sys.path.insert(0, str(REFERENCES))
    from make_llama4_data_references import torchtune_source
    target = work / "torchtune_src"
    source = torchtune_source(target)
    if source is None:
        raise SystemExit("torchtune's source is not found (FT_TORCHTUNE_MIRROR, FT_TORCHTUNE_SOURCE): no release "
                         "of torchtune has Llama 4")
    if os.environ.get("FT_TORCHTUNE_SOURCE"):
        recipe, commit = source / "recipes" / "full_finetune_distributed.py", "FT_TORCHTUNE_SOURCE"
    else:
        recipe = target / "recipes" / "full_finetune_distributed.py"
        recipe.parent.mkdir(parents=True, exist_ok=True)
        shown = subprocess.run(["git", "-C", str(MIRROR), "show", "HEAD:recipes/full_finetune_distributed.py"],
                               check=True, capture_output=True)
        recipe.write_bytes(shown.stdout)
        commit = subprocess.run(["git", "-C", str(MIRROR), "rev-parse", "HEAD"], check=True, capture_output=True,
                                text=True).stdout.strip()
    return {"source": str(source), "recipe": str(recipe), "commit": commit}


def worker_make(s: dict, work: pathlib.Path) -> None:
    import torch
    from safetensors.torch import save_file
    from transformers import Llama4ForConditionalGeneration
    sys.path.insert(0, str(REFERENCES))
    from make_llama4_golden import trainability  # llama4_scout_17b_16e's split on the published keys

    n = s["batch_size"] * s["steps"]
    write_cauldron(work / "cauldron.parquet", n, s["vision"]["tile"])
    torchtune = extract_torchtune(work)

    config = llama4_config(s)
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)  # built in bfloat16: never a float32 copy of the embeddings
    model = Llama4ForConditionalGeneration(config)
    torch.set_default_dtype(torch.float32)
    state = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in model.state_dict().items()}
    del model
    for prefix in ("vision_model.", "multi_modal_projector.", "language_model.model.", "language_model.lm_head."):
        if not any(k.startswith(prefix) for k in state):
            raise SystemExit(f"no parameter under {prefix}: transformers' key layout is not the published one")
    for k, v in state.items():
        drawn = v.numel() > 1 and "norm" not in k and not k.endswith(".bias")  # biases start at zero
        if not torch.isfinite(v).all() or (drawn and float(v.float().std()) == 0.0):
            raise SystemExit(f"{k}: transformers left it uninitialised")
    model_dir = work / "model"
    model_dir.mkdir(exist_ok=True)
    save_file(state, str(model_dir / "model.safetensors"), metadata={"format": "pt"})
    config.save_pretrained(model_dir)
    counts = {"params": sum(v.numel() for v in state.values()),
              "trainable": sum(v.numel() for k, v in state.items() if trainability(k)),
              "embedding_and_output": 2 * s["text"]["vocab"] * s["text"]["hidden"],
              "bytes": (model_dir / "model.safetensors").stat().st_size}
    del state

    # The records through torchtune's own data path: every image the same number of tiles and
    # <|patch|> tokens.
    sys.path.insert(0, str(REFERENCES))
    from make_llama4_data_references import import_torchtune
    the_cauldron_dataset, llama4_transform = import_torchtune(torchtune["source"])
    transform = llama4_transform(path=str(TOKENIZER), max_seq_len=MAX_SEQ_LEN, image_size=s["vision"]["tile"],
                                 max_num_tiles=MAX_NUM_TILES)
    ds = the_cauldron_dataset(model_transform=transform, source="parquet", data_files=str(work / "cauldron.parquet"),
                              split="train", cache_dir=str(work / "hf_datasets_check"))
    tiles, lengths = set(), []
    for i in range(len(ds)):
        sample = ds[i]
        images = sample["encoder_input"]["vision"]["images"]
        tiles.update(int(im.shape[0]) for im in images)
        lengths.append(len(sample["tokens"]))
        per_tile = transform.patch_tokens_per_tile
        if sample["tokens"].count(PATCH_TOKEN) != sum(int(im.shape[0]) for im in images) * per_tile:
            raise SystemExit(f"sample {i}: <|patch|> tokens and tiles disagree")
    shutil.rmtree(work / "hf_datasets_check", ignore_errors=True)
    if len(tiles) != 1:
        raise SystemExit(f"the images give {sorted(tiles)} tiles each, not one count for all as IMAGE_SIZES means")
    counts.update(tiles=tiles.pop(), tokens=[min(lengths), max(lengths)], torchtune=torchtune)
    print(json.dumps(counts))


def prepare(a, s: dict, work: pathlib.Path) -> dict:
    marker = work / "shape.json"
    if marker.exists() and json.loads(marker.read_text()).get("shape") == s:
        return json.loads(marker.read_text())["counts"]
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    args = [SYSTEM_PYTHON, str(pathlib.Path(__file__).resolve()), "--worker", "--work", str(work),
            "--text-layers", str(a.text_layers), "--moe-every", str(a.moe_every), "--experts", str(a.experts),
            "--vision-layers", str(a.vision_layers), "--batch-size", str(a.batch_size),
            "--steps", str(a.steps)] + (["--tiny"] if a.tiny else [])
    made = subprocess.run(args, env=thread_env(a.threads), capture_output=True, text=True)
    if made.returncode != 0:
        sys.exit(f"writing the work directory failed ({made.returncode}):\n{tail(made.stdout + made.stderr)}")
    counts = json.loads(made.stdout.strip().splitlines()[-1])
    marker.write_text(json.dumps({"shape": s, "counts": counts}, indent=1) + "\n")
    return counts


# --------------------------------------------------------------------------------------------
# torchtune's side
# --------------------------------------------------------------------------------------------
TORCHTUNE_MODULE = '''"""llama4_step.py's torchtune parts: the model builder (config.instantiate does not build nested
_component_ entries), the collate for Llama 4's images, and a DiskLogger that also writes the
recipe's own step seconds."""
import sys

from torchtune.data import padded_collate
from torchtune.models.llama4 import llama4_decoder, llama4_vision_encoder
from torchtune.models.llama4._tokenizer import LLAMA4_SPECIAL_TOKENS
from torchtune.modules.model_fusion import EarlyFusionModel
from torchtune.training.metric_logging import DiskLogger


def early_fusion(encoder, decoder, decoder_trainable, encoder_trainable, fusion_trainable):
    """llama4_scout_17b_16e's EarlyFusionModel with the given component sizes."""
    return EarlyFusionModel(llama4_decoder(**decoder), encoders={"vision": llama4_vision_encoder(**encoder)},
                            encoder_tokens={"vision": LLAMA4_SPECIAL_TOKENS["<|patch|>"]},
                            encoders_trainable={"vision": encoder_trainable}, decoder_trainable=decoder_trainable,
                            fusion_trainable=fusion_trainable)


def llama4_collate(batch, padding_idx=0, ignore_idx=-100, cp_degree=1, pad_to_multiple_of=1):
    """torchtune's padded_collate as its Llama 4 generation recipe (dev/generate_v2_distributed.py)
    uses it: tokens and labels padded right, every image's tiles concatenated in order into the
    [tiles, 3, h, w] that Llama4VisionEncoder.forward takes. (padded_collate_tiled_images_and_mask
    wants an aspect_ratio that llama4_transform does not put in the sample, and a 6-D image batch
    that the Llama 4 encoder does not take.) The samples' other keys (the per-token mask) are left
    out, as padded_collate_tiled_images_and_mask leaves them out."""
    if cp_degree != 1:
        raise ValueError("context parallelism is not used here")
    batch = [{"tokens": x["tokens"], "labels": x["labels"], "encoder_input": x["encoder_input"]} for x in batch]
    return padded_collate(batch, pad_direction="right", keys_to_pad=["tokens", "labels"],
                          padding_idx={"tokens": padding_idx, "labels": ignore_idx},
                          pad_to_multiple_of=pad_to_multiple_of)


''' + STEP_DISK_LOGGER

TORCHTUNE_LAUNCHER = '''import pathlib, runpy, sys
source, recipe, references, config = sys.argv[1:5]
sys.path.insert(0, references)
from make_llama4_data_references import import_torchtune  # torchtune's source first, torchao names aliased
import_torchtune(source)
import torchao.quantization


class _NotInstalled:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("not in the installed torchao")


# Two more names the source's torchtune.training.quantization imports from a newer torchao; only
# its quantizers use them (neither is reached by this run).
torchao.quantization.Int8DynamicActivationIntxWeightConfig = _NotInstalled
sys.modules["torchao.quantization.quantize_.workflows"].Int4PackingFormat = _NotInstalled
import torch.distributed
import torchtune.training

_barrier = torch.distributed.barrier


def barrier(*args, device_ids=None, **kwargs):
    """The recipe's barrier(device_ids=[device.index]): a CPU device has no index (None), which
    barrier's options refuse (a TypeError); no device ids then, as for any CPU process group."""
    return _barrier(*args, device_ids=None if device_ids == [None] else device_ids, **kwargs)


torch.distributed.barrier = barrier
_histc = torch.histc


def histc(input, bins=100, min=0, max=0, **kwargs):
    """TokenChoiceTopKRouter counts the tokens per expert with torch.histc of the int64 expert
    indices, which only CUDA implements ("histogram_cpu" not implemented for 'Long'): counted in
    float32 here (bins of width 1 over [0, experts]: exact) and returned as int64, as CUDA's."""
    if input.is_floating_point() or kwargs:
        return _histc(input, bins=bins, min=min, max=max, **kwargs)
    return _histc(input.float(), bins=bins, min=min, max=max).to(input.dtype)


torch.histc = histc
# On a CPU the recipe calls these CUDA memory functions unconditionally (get_memory_stats raises).
torchtune.training.get_memory_stats = lambda device, reset_stats=True: {}
torchtune.training.log_memory_stats = lambda stats, message="": None
torchtune.training.cleanup_before_training = lambda: None
sys.argv = ["full_finetune_distributed", "--config", config]
runpy.run_path(recipe, run_name="__main__")
'''


def torchtune_config(s: dict, work: pathlib.Path, out: pathlib.Path) -> dict:
    v, t = s["vision"], s["text"]
    encoder = {"patch_size": v["patch"], "num_heads": v["heads"], "clip_embed_dim": v["hidden"],
               "clip_num_layers": v["layers"], "decoder_embed_dim": t["hidden"], "projection_embed_dim": v["projector"],
               "tile_size": v["tile"], "max_num_tiles": MAX_NUM_TILES, "in_channels": 3}
    # llama4_scout_17b_16e's decoder arguments; skip_rope_interval 1 makes every layer a NoPE layer
    # ((i + 1) % 1 == 0), which Hugging Face's no_rope_layers [0, ...] says.
    decoder = {"vocab_size": t["vocab"], "num_layers": t["layers"], "num_heads": t["heads"],
               "num_kv_heads": t["kv_heads"], "embed_dim": t["hidden"], "hidden_dim": t["expert"],
               "max_seq_len": ROPE_MAX_SEQ_LEN, "attn_dropout": 0.0, "rope_base": 500000, "norm_eps": 1e-5,
               "num_experts": t["experts"], "experts_per_token": 1, "use_shared_expert": True, "use_qk_norm": True,
               "moe_every_n_layers": t["moe_every"], "mlp_hidden_dim": t["mlp"], "skip_rope_interval": 1,
               "attention_chunk_size": 8192, "use_scaled_rope": True, "rope_scale_factor": 16.0,
               "rope_low_freq_factor": 1.0, "rope_high_freq_factor": 1.0, "old_context_len": 8192}
    return {
        "output_dir": str(out), "seed": 0, "shuffle": False, "epochs": 1, "max_steps_per_epoch": s["steps"],
        "batch_size": s["batch_size"], "gradient_accumulation_steps": 1, "clip_grad_norm": None, "compile": False,
        "optimizer_in_bwd": False, "device": "cpu", "dtype": "bf16", "resume_from_checkpoint": False,
        "enable_activation_checkpointing": False, "enable_activation_offloading": False, "fsdp_cpu_offload": False,
        "log_every_n_steps": 1, "log_peak_memory_stats": False, "log_level": "INFO",
        "save_every_n_steps": s["steps"] + 1,  # one save, the final one (as fthost's), not also the epoch's
        "collate_fn": "llama4_step_torchtune.llama4_collate",
        "model": {"_component_": "llama4_step_torchtune.early_fusion", "encoder": encoder, "decoder": decoder,
                  "decoder_trainable": True, "encoder_trainable": False, "fusion_trainable": True},
        "tokenizer": {"_component_": "torchtune.models.llama4.llama4_transform", "path": str(TOKENIZER),
                      "max_seq_len": MAX_SEQ_LEN, "image_size": v["tile"], "max_num_tiles": MAX_NUM_TILES},
        "dataset": {"_component_": "torchtune.datasets.multimodal.the_cauldron_dataset", "source": "parquet",
                    "data_files": str(work / "cauldron.parquet"), "split": "train", "packed": False},
        "checkpointer": {"_component_": "torchtune.training.FullModelHFCheckpointer",
                         "checkpoint_dir": str(work / "model"), "checkpoint_files": ["model.safetensors"],
                         "recipe_checkpoint": None, "output_dir": str(out), "model_type": "LLAMA4"},
        "optimizer": {"_component_": "torch.optim.AdamW", "lr": LR, "betas": list(BETAS), "eps": EPS,
                      "weight_decay": WEIGHT_DECAY, "fused": True},
        "loss": {"_component_": "torchtune.modules.loss.LinearCrossEntropyLoss"},
        "metric_logger": {"_component_": "llama4_step_torchtune.StepDiskLogger", "log_dir": str(out / "logs"),
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
_component_ = "fthost.models.llama4.from_hf_config"
path = "{work / "model"}"
decoder_trainable = true
encoder_trainable = false
fusion_trainable = true

[tokenizer]
_component_ = "torchtune.models.llama4.llama4_transform"
path = "{TOKENIZER}"
max_seq_len = {MAX_SEQ_LEN}
image_size = {s["vision"]["tile"]}
max_num_tiles = {MAX_NUM_TILES}

[checkpointer]
_component_ = "torchtune.training.FullModelHFCheckpointer"
checkpoint_dir = "{work / "model"}"
checkpoint_files = ["model.safetensors"]
model_type = "LLAMA4"
output_dir = "{out}"

[dataset]
_component_ = "torchtune.datasets.multimodal.the_cauldron_dataset"
source = "parquet"
data_files = "{work / "cauldron.parquet"}"
split = "train"

[loss]
_component_ = "torchtune.modules.loss.LinearCrossEntropyLoss"

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
def profiler_schedule(step: int) -> dict:
    """The profiler component's keys (the same on both sides) recording optimizer step `step` alone."""
    return {"enabled": True, "cpu": True, "cuda": False, "profile_memory": False, "with_stack": False,
            "record_shapes": True, "with_flops": False, "wait_steps": step - 2, "warmup_steps": 1, "active_steps": 1,
            "num_cycles": 1}


def run_torchtune(s: dict, work: pathlib.Path, threads: int, name: str, counts: dict, profile: int = 0) -> dict:
    out = work / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    (work / "llama4_step_torchtune.py").write_text(TORCHTUNE_MODULE)
    (work / "torchtune_launcher.py").write_text(TORCHTUNE_LAUNCHER)
    cfg = torchtune_config(s, work, out)
    if profile:
        cfg["profiler"] = {"_component_": "torchtune.training.setup_torch_profiler",
                           "output_dir": str(work / f"{name}.trace"), **profiler_schedule(profile)}
    config = out / "torchtune.yaml"
    config.write_text(json.dumps(cfg, indent=1))  # YAML is JSON's superset
    env = thread_env(threads, str(work))
    env["HF_DATASETS_CACHE"] = str(work / "hf_datasets")
    tt = counts["torchtune"]
    command = [SYSTEM_PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1",
               str(work / "torchtune_launcher.py"), tt["source"], tt["recipe"], str(REFERENCES), str(config)]
    try:
        run = launch(command, env, work / f"{name}.log")
        rows = read_disk_log(out / "logs" / "metrics.txt")
        for r in rows:
            r["tokens_per_second_per_gpu"] = r["num_tokens"] / r["step_seconds"]
        (work / f"{name}.metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    finally:
        shutil.rmtree(out, ignore_errors=True)  # its final checkpoint: the model's size
    return summarise(rows, run)


def run_fthost(s: dict, work: pathlib.Path, threads: int, name: str, counts: dict, profile: int = 0,
               fused: bool = False) -> dict:
    if not FTHOST.exists():
        raise RunFailed(f"{FTHOST} is missing (build it first)")
    out = work / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    text = fthost_config(s, work, out, threads)
    if fused:  # LibTorch's fused AdamW (torch's fused=True, torchtune's here) instead of fthost's own kernel
        text = text.replace(f"weight_decay = {WEIGHT_DECAY}\n", f"weight_decay = {WEIGHT_DECAY}\nfused = true\n")
    if profile:
        text += (f'\n[profiler]\n_component_ = "torchtune.training.setup_torch_profiler"\n'
                 f'output_dir = "{work / f"{name}.trace"}"\n' +
                 "".join(f"{k} = {json.dumps(v)}\n" for k, v in profiler_schedule(profile).items()))
    config = out / "run.toml"
    config.write_text(text)
    try:
        run = launch([str(FTHOST), "--config", str(config)], thread_env(threads), work / f"{name}.log")
        text = (out / "logs" / "metrics.jsonl").read_text()
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        for r in rows:
            r["step_seconds"] = r["num_tokens"] / r["tokens_per_second_per_gpu"]  # world size 1
        (work / f"{name}.metrics.jsonl").write_text(text)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return summarise(rows, run)


def print_profile(work: pathlib.Path, name: str, step: int) -> None:
    """bench/profile_summary.py's self time per operator of the recorded step."""
    traces = sorted((work / f"{name}.trace").rglob("*.json*"))
    traces = [t for t in traces if t.name.endswith((".json", ".json.gz")) and "trace" in t.name]
    if not traces:
        print(f"{name}: no trace under {work / f'{name}.trace'}")
        return
    trace = traces[-1]
    if trace.suffix == ".gz":
        import gzip
        plain = trace.with_suffix("")
        plain.write_bytes(gzip.decompress(trace.read_bytes()))
        trace = plain
    summary = subprocess.run([sys.executable, str(ROOT / "bench" / "profile_summary.py"), str(trace), "--top", "20"],
                             capture_output=True, text=True)
    print(f"\n{name}: step {step}, self time per operator ({trace})\n{summary.stdout}{summary.stderr}", flush=True)
    # The largest operators by input shapes (total duration, children included).
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    by_shape = {}
    for e in events:
        if e.get("ph") == "X" and e.get("name", "").startswith("aten::") and "Input Dims" in e.get("args", {}):
            key = (e["name"], json.dumps(e["args"]["Input Dims"]))
            ms, calls = by_shape.get(key, (0.0, 0))
            by_shape[key] = (ms + e["dur"] / 1e3, calls + 1)
    for (op, dims), (ms, calls) in sorted(by_shape.items(), key=lambda kv: -kv[1][0])[:12]:
        print(f"  {ms:9.1f} ms {calls:4d} x {op} {dims[:100]}")


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------
def sides(a) -> dict:
    chosen = {"torchtune": run_torchtune, "fthost": run_fthost}
    if a.fthost_fused:
        chosen["fthost-fused"] = lambda *args, **kw: run_fthost(*args, fused=True, **kw)
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--text-layers", type=int, default=1, help="decoder layers, all NoPE (Scout: 48)")
    parser.add_argument("--moe-every", type=int, default=1,
                        help="layer i is a mixture of experts where (i + 1) %% this == 0 (Scout: 1)")
    parser.add_argument("--experts", type=int, default=0, help="routed experts per mixture (default: 1, what fits "
                        "this machine; --tiny: Scout's 16)")
    parser.add_argument("--vision-layers", type=int, default=2, help="vision layers (Scout: 34)")
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6, help="optimizer steps per run, the first a warm-up")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--work", type=pathlib.Path, default=pathlib.Path("/tmp/llama4_step"))
    parser.add_argument("--tiny", action="store_true", help="every width shrunk (text hidden 64, tiles of 56 px)")
    parser.add_argument("--fthost-fused", action="store_true",
                        help="a third run per round: fthost with optimizer.fused = true (LibTorch's fused AdamW, "
                        "the kernel torchtune runs here) instead of its own single-pass kernel")
    parser.add_argument("--profile", type=int, default=0, metavar="STEP",
                        help="instead of timing: one run per side with the profiler recording optimizer step STEP "
                        "(>= 2), and each side's self time per operator (bench/profile_summary.py)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.text_layers < 1 or a.vision_layers < 1 or a.moe_every < 1 or a.steps < 2 or a.experts < 0:
        parser.error("need --text-layers >= 1, --vision-layers >= 1, --moe-every >= 1 and --steps >= 2")
    if a.profile and not 2 <= a.profile <= a.steps:
        parser.error("--profile needs a step from 2 to --steps")
    s = shape(a)
    work = a.work.resolve()
    if a.worker:
        return worker_make(s, work)

    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"uptime at start: {uptime}", flush=True)
    if not TOKENIZER.exists():
        sys.exit(f"{TOKENIZER} is missing (scripts/tokenizer_fixtures.py writes it)")
    v, t = s["vision"], s["text"]
    kinds = ", ".join(f"{'MoE' if i in t['moe_layers'] else 'dense'}" for i in range(t["layers"]))
    chosen = sides(a)
    rounds = 1 if a.profile else a.repeats
    print(f"{os.cpu_count()} cores; {a.threads} threads per run (OMP_NUM_THREADS, OMP_WAIT_POLICY=PASSIVE / "
          f"num_threads); {rounds} round(s) of {', '.join(chosen)}; {a.steps} steps of batch {a.batch_size} per run, "
          f"the first dropped; bf16, AdamW lr {LR}" + (f"; profiling step {a.profile}" if a.profile else ""),
          flush=True)
    print(f"model{' (--tiny)' if a.tiny else ' (Scout widths)'}: text hidden {t['hidden']}, {t['heads']} / "
          f"{t['kv_heads']} KV heads of {t['head_dim']}, {t['layers']} NoPE layer(s) ({kinds}; {t['experts']} routed "
          f"expert(s) of {t['expert']} + the shared one, top 1; dense MLP {t['mlp']}), vocab {t['vocab']}; vision "
          f"hidden {v['hidden']}, {v['heads']} heads, MLP {v['intermediate']}, {v['layers']} layers, tiles of "
          f"{v['tile']} px, projector {v['projector']}", flush=True)
    start = time.perf_counter()
    counts = prepare(a, s, work)
    print(f"  {counts['params'] / 1e6:.1f} M parameters ({counts['embedding_and_output'] / 1e6:.1f} M the embedding "
          f"and output), {counts['trainable'] / 1e6:.1f} M trainable (Scout's split); checkpoint "
          f"{counts['bytes'] / 2**30:.2f} GiB in {work}; {counts['tiles']} tiles per image, samples of "
          f"{counts['tokens'][0]}-{counts['tokens'][1]} tokens; torchtune {counts['torchtune']['commit'][:12]} (ready "
          f"after {time.perf_counter() - start:.0f} s)", flush=True)

    results = {side: [] for side in chosen}
    failed = {}
    for rnd in range(rounds):
        for side, run in chosen.items():
            if side in failed:
                continue
            name = f"{side}-profile" if a.profile else f"{side}-{rnd}"
            try:
                r = run(s, work, a.threads, name, counts, profile=a.profile)
            except (RunFailed, subprocess.TimeoutExpired) as e:
                failed[side] = str(e)
                print(f"round {rnd + 1} {side:12s} FAILED: {e}", flush=True)
                continue
            results[side].append(r)
            print(f"round {rnd + 1} {side:12s} steps {' '.join(f'{x:.2f}' for x in r['seconds'])} s; "
                  f"losses {' '.join(f'{x:.4f}' for x in r['losses'][:3])}; tokens {r['tokens'][:3]}; "
                  f"peak RSS {r['step_rss_gib']:.2f} GiB by the last step, {r['peak_rss_gib']:.2f} GiB in the run; "
                  f"{r['minor_faults'] / 1e6:.1f} M page faults, {r['cpu_s']:.0f} CPU s; wall {r['wall_s']:.0f} s",
                  flush=True)
            if a.profile:
                print_profile(work, name, a.profile)
    if results["torchtune"] and results["torchtune"][0]["trainable"] is not None:
        got, expected = int(results["torchtune"][0]["trainable"]), counts["trainable"]
        verdict = "as expected" if got == expected else f"NOT the {expected / 1e6:.1f} M expected"
        print(f"torchtune's model trains {got / 1e6:.1f} M parameters ({verdict})")
    if a.profile:
        sys.exit(1 if failed else 0)

    print()
    print(f"{'side':13s} {'step s (median)':>15s} {'steps':>6s} {'loss step 1':>12s} {'tokens step 1':>14s} "
          f"{'RSS steps GiB':>14s} {'RSS run GiB':>12s} {'run wall s':>11s}")
    medians = {}
    for side in chosen:
        if not results[side]:
            print(f"{side:13s} {'failed':>15s}")
            continue
        steady = [x for r in results[side] for x in r["seconds"][1:]]
        medians[side] = statistics.median(steady)
        first = results[side][0]
        print(f"{side:13s} {medians[side]:15.3f} {len(steady):6d} {first['losses'][0]:12.4f} {first['tokens'][0]:14d} "
              f"{statistics.median(r['step_rss_gib'] for r in results[side]):14.2f} "
              f"{statistics.median(r['peak_rss_gib'] for r in results[side]):12.2f} "
              f"{statistics.median(r['wall_s'] for r in results[side]):11.0f}")
    for other in [side for side in chosen if side != "torchtune"]:
        if "torchtune" in medians and other in medians:
            pairs = [statistics.median(tt["seconds"][1:]) / statistics.median(ft["seconds"][1:])
                     for tt, ft in zip(results["torchtune"], results[other])]
            print(f"torchtune / {other} step time: {medians['torchtune'] / medians[other]:.2f} (ratio of the "
                  f"medians); per round {', '.join(f'{p:.2f}' for p in pairs)}")
            if results["torchtune"][0]["tokens"] != results[other][0]["tokens"]:
                print(f"note: the sides count different tokens per step: torchtune {results['torchtune'][0]['tokens']},"
                      f" {other} {results[other][0]['tokens']}")
    print(f"logs and per-step metrics: {work}/{{{','.join(chosen)}}}-N.log / .metrics.jsonl")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
