#!/usr/bin/env python3
"""A golden training trajectory for a tiny Llama 3.2 Vision (Hugging Face's Mllama), for fthost's
vision training tests.

  .venv/bin/python tests/vision_references/make_vision_golden.py OUT_DIR

Writes OUT_DIR/vision_golden/:
- images/: 8 seeded patterns written by Pillow (PNG and JPEG), sized so that with 28 px tiles and
  at most 4 tiles torchtune's transform picks different tile grids.
- data.json: 8 ShareGPT multimodal samples ({"image", "conversations"}) as torchtune's
  multimodal_chat_dataset reads them; the "<image>" tag stands at the start of some human turns and
  in the middle of others.
- mllama_tiny/{config.json, model.safetensors}: the initial model in float32 under the published
  layout of meta-llama/Llama-3.2-11B-Vision (vision_model.*, multi_modal_projector.*,
  language_model.model.*, language_model.lm_head.weight); text vocabulary 128256 (Llama 3's, so
  that the tokenizer's special tokens and the image token 128256 are real rows), 5 text layers of
  which 1 and 3 are cross-attention.
- expected.jsonl: per optimizer step {"step", "loss", "tokens"}.
- final.safetensors: every parameter after the last step (published names, float32).
- initial_equals_final.json: the published names that training must leave bitwise unchanged, and
  the rows of the text embedding that must stay unchanged.
- batches.safetensors: the first step's batch, as torchtune's collate makes it (tokens, labels,
  images, aspect_ratio, encoder_mask) and as the Hugging Face model takes it (pixel_values,
  aspect_ratio_ids, aspect_ratio_mask, cross_attention_mask, shifted_labels).
- samples.jsonl: every sample's tokens, labels, image and tile grid after torchtune's transform.

The training run mirrors torchtune 0.6.1's recipes/full_finetune_distributed.py at world size 1
(the semantics tests/golden/make_family_goldens.py mirrors for the text families):
- data: torchtune's own multimodal_chat_dataset with llama3_2_vision_transform (tiktoken tokenizer,
  CLIP image transform, vision cross-attention mask), samples in dataset order (shuffle off),
  batch size 2, drop_last, gradient accumulation 1, 4 steps (one epoch), collated by torchtune's
  padded_collate_tiled_images_and_mask; pad_max_tiles=4 because Hugging Face's model always takes
  max_num_tiles tiles per image (the recipe leaves it None, which pads to the batch's largest image).
  Padding tiles are zero; the cross-attention mask hides their tokens from the text, but in Hugging
  Face's (and Meta's) vision encoder the real tiles' tokens still attend to them.
- trainable parameters: llama3_2_vision_11b's defaults (decoder_trainable=False,
  encoder_trainable=True, fusion_trainable=True) as DeepFusionModel applies them; checked at run
  time against a tiny torchtune DeepFusionModel whose requires_grad flags are carried through
  torchtune's own torchtune-to-Hugging-Face weight conversion.
- loss: the recipe's; labels shifted left by one with -100 appended (the recipe's
  ignore_labels_cache hstack), cross entropy of float32 logits summed over the target tokens
  (CEWithChunkedOutputLoss.compute_cross_entropy), gradients scaled by 1 / the step's number of
  target tokens (training.scale_grads); logged loss = summed loss / that number.
- optimizer: torch.optim.AdamW(lr 2e-3, betas (0.9, 0.999), eps 1e-8, weight decay 0.01) over the
  trainable parameters; no gradient clipping, no learning rate schedule.

The model is Hugging Face's code (eager attention) with the one change of
make_mllama_references.py: text rows that see no image get no cross-attention output (Meta's
reference and torchtune do this; Hugging Face zeroes only the cross-attention MLP output).
The same training repeated in float64 (every float32 that transformers asks for made float64, as
there) must reproduce every step's loss to 1e-4 relative, or the script fails.
"""
import argparse
import copy
import io
import inspect
import json
import os
import pathlib
import random
import sys
import tempfile

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import torch
import torch.nn.functional as F
from PIL import Image
from safetensors.torch import save_file
from transformers import MllamaConfig, MllamaForConditionalGeneration
from transformers.models.mllama import modeling_mllama as mm
from transformers.models.mllama.configuration_mllama import MllamaTextConfig, MllamaVisionConfig

from torchtune.data import padded_collate_tiled_images_and_mask
from torchtune.datasets.multimodal import multimodal_chat_dataset
from torchtune.models.llama3_2_vision import llama3_2_vision_11b, llama3_2_vision_transform
from torchtune.models.llama3_2_vision._component_builders import (
    llama3_2_vision_decoder,
    llama3_2_vision_encoder,
)
from torchtune.models.llama3_2_vision._convert_weights import llama3_vision_tune_to_hf
from torchtune.modules.model_fusion import DeepFusionModel

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_mllama_references import KEY_PREFIXES, published_keys, redraw_parameters  # noqa: E402
from make_mllama_references import run as mllama_forward  # noqa: E402

VOCAB = 128256            # Llama 3's vocab_size; the embedding has 8 more rows (the fusion embedding)
IMAGE_TOKEN = 128256      # torchtune's Llama3Tokenizer image_id, the first of those 8 rows
PAD_TOKEN = 128004        # <|finetune_right_pad_id|>, torchtune's pad_id
TILE, PATCH, MAX_TILES = 28, 14, 4
CROSS_LAYERS = [1, 3]
IGNORE = -100             # CROSS_ENTROPY_IGNORE_IDX, CEWithChunkedOutputLoss.ignore_index
BATCH_SIZE, STEPS = 2, 4
LR, BETAS, EPS, WEIGHT_DECAY = 2e-3, (0.9, 0.999), 1e-8, 0.01
MAX_SEQ_LEN = 256
FP64_LOSS_TOLERANCE = 1e-4

# (file name, width, height): torchtune's transform gives each of the 8 supported tile grids
# (rows, columns) once: 1x2, 2x1, 2x2 (padded, not resized: max_size = tile_size limits upscaling),
# 1x3, 3x1, 1x1, 1x4, 4x1.
IMAGES = [
    ("image0.png", 50, 24), ("image1.jpg", 20, 50), ("image2.png", 40, 30), ("image3.jpg", 90, 30),
    ("image4.png", 30, 90), ("image5.jpg", 28, 28), ("image6.png", 110, 26), ("image7.jpg", 25, 100),
]
# (human turn with the <image> tag, answer); the tag leads some turns and sits inside others.
CONVERSATIONS = [
    ("<image> What colour is the square?", "The square is red."),
    ("Look: <image> what colour is it?", "It is mostly blue."),
    ("<image>Describe the picture.", "Green stripes on a grey field."),
    ("Is this <image> tall or wide?", "It is wide and thin."),
    ("<image> How many boxes?", "There are three small boxes."),
    ("Here is a tile: <image> Name the colour.", "A dark shade of purple."),
    ("<image> Is it bright?", "Yes, quite bright overall."),
    ("Please check <image> the top left corner.", "The corner is yellow."),
]


def fail(message):
    raise RuntimeError(message)


def fixtures_root():
    """FT_FIXTURES, else shared/fixtures beside the repository."""
    repo = pathlib.Path(__file__).resolve().parents[2]
    return pathlib.Path(os.environ.get("FT_FIXTURES") or repo.parent / "shared" / "fixtures")


# ----------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------
def pattern(seed, width, height):
    """A seeded RGB pattern: a two-colour gradient, a few solid rectangles and mild noise. Python's
    random.Random (Mersenne Twister) keeps it the same bytes across Python, numpy and torch versions."""
    rng = random.Random(seed)
    c0 = [rng.randrange(256) for _ in range(3)]
    c1 = [rng.randrange(256) for _ in range(3)]
    boxes = []
    for _ in range(rng.randrange(1, 4)):
        x0, y0 = rng.randrange(width), rng.randrange(height)
        boxes.append((x0, y0, x0 + rng.randrange(3, width // 2 + 4), y0 + rng.randrange(3, height // 2 + 4),
                      [rng.randrange(256) for _ in range(3)]))
    pixels = bytearray()
    for y in range(height):
        for x in range(width):
            t = (x + y) / (width + height - 2)
            rgb = [round(a + (b - a) * t) for a, b in zip(c0, c1)]
            for x0, y0, x1, y1, colour in boxes:
                if x0 <= x < x1 and y0 <= y < y1:
                    rgb = list(colour)
            pixels += bytes(min(255, max(0, v + rng.randrange(-12, 13))) for v in rgb)
    return Image.frombytes("RGB", (width, height), bytes(pixels))


def encode(spec):
    """The encoded file bytes of an image spec (seed, width, height, format, ...): JPEG at 4:4:4 (no
    chroma subsampling), so decoders need not agree on chroma upsampling."""
    seed, width, height, fmt = spec[:4]
    buffer = io.BytesIO()
    if fmt == "JPEG":
        pattern(seed, width, height).save(buffer, format="JPEG", quality=95, subsampling=0)
    else:
        pattern(seed, width, height).save(buffer, format="PNG")
    return buffer.getvalue()


def reference_transform():
    """torchtune's llama3_2_vision_transform on the fixtures' small tiktoken model, tiles of TILE
    pixels, MAX_SEQ_LEN, its padding and image ids checked."""
    tokenizer_path = fixtures_root() / "torchtune_assets" / "tiktoken_small.model"
    if not tokenizer_path.exists():
        fail(f"{tokenizer_path} not found (set FT_FIXTURES)")
    transform = llama3_2_vision_transform(path=str(tokenizer_path), max_seq_len=MAX_SEQ_LEN, image_size=TILE)
    if (transform.pad_id, transform.tokenizer.image_id) != (PAD_TOKEN, IMAGE_TOKEN):
        fail(f"pad / image ids are {transform.pad_id} / {transform.tokenizer.image_id}")
    return transform


def write_images(images_dir):
    images_dir.mkdir(parents=True, exist_ok=True)
    worst_jpeg = 0
    for i, (name, width, height) in enumerate(IMAGES):
        image = pattern(1000 + i, width, height)
        path = images_dir / name
        if name.endswith(".jpg"):
            # 4:4:4 (no chroma subsampling), so decoders need not agree on chroma upsampling.
            image.save(path, format="JPEG", quality=95, subsampling=0)
        else:
            image.save(path, format="PNG")
        with Image.open(path) as f:
            back = f.convert("RGB")
        if back.size != (width, height):
            fail(f"{name} reads back as {back.size}")
        diff = max(abs(a - b) for a, b in zip(back.tobytes(), image.tobytes()))
        if name.endswith(".png") and diff:
            fail(f"{name} does not read back losslessly")
        worst_jpeg = max(worst_jpeg, diff if name.endswith(".jpg") else 0)
    return worst_jpeg


def write_data(path):
    data = [{"image": name, "conversations": [{"from": "human", "value": human}, {"from": "gpt", "value": answer}]}
            for (name, _, _), (human, answer) in zip(IMAGES, CONVERSATIONS)]
    path.write_text(json.dumps(data, indent=1) + "\n")


def load_samples(data_json, images_dir, cache_dir):
    """torchtune's dataset: ShareGPTToMessages (train_on_input False, the image loaded into the
    first user turn at its tag) then Llama3VisionTransform (CLIP tiling, tokenizer, cross-attention
    mask), then SFTDataset's labels (tokens where the mask is False, -100 elsewhere)."""
    transform = reference_transform()
    ds = multimodal_chat_dataset(
        model_transform=transform, source="json", data_files=str(data_json), split="train",
        column_map={"image": "image", "conversations": "conversations"}, image_tag="<image>",
        image_dir=str(images_dir), cache_dir=str(cache_dir))
    samples = [ds[i] for i in range(len(ds))]
    for i, s in enumerate(samples):
        if len(s["encoder_input"]["images"]) != 1 or s["tokens"].count(IMAGE_TOKEN) != 1:
            fail(f"sample {i} does not hold exactly one image and one image token")
        if len(s["tokens"]) >= MAX_SEQ_LEN:
            fail(f"sample {i} reaches max_seq_len and would be truncated")
    return transform, samples


def collate(transform, samples, indices):
    # The recipe's collate_fn with padding_idx=tokenizer.pad_id, ignore_idx=loss_fn.ignore_index.
    return padded_collate_tiled_images_and_mask([samples[i] for i in indices], padding_idx=transform.pad_id,
                                                ignore_idx=IGNORE, pad_max_tiles=MAX_TILES)


def hf_inputs(batch, config):
    """torchtune's collated batch in Hugging Face's Mllama form, as MllamaImageProcessor and
    MllamaProcessor would build it:
    - aspect_ratio_ids: convert_aspect_ratios_to_ids, 1 + the index of the image's
      (num_tiles_height, num_tiles_width) in supported_aspect_ratios (0 marks a padding image).
      torchtune's aspect_ratio is best_resolution // tile_size with best_resolution (height, width),
      the same (rows, columns) order (and torchtune's tune_to_hf writes embedding[:h, :w] of its
      tile embeddings to id i + 1 for supported (h, w) = supported_aspect_ratios[i]).
    - aspect_ratio_mask: build_aspect_ratio_mask, 1 for the image's rows * columns tiles (and tile 0
      of any image), 0 after.
    - cross_attention_mask [b, s, images, tiles]: torchtune's encoder_mask [b, s, images * tiles *
      tokens_per_tile] has one column per vision token, tokens_per_tile = patches + CLS = 5
      consecutive columns per tile, all equal within a tile."""
    images = batch["encoder_input"]["images"]
    aspect = batch["encoder_input"]["aspect_ratio"]
    b, n_img, tiles = images.shape[:3]
    if tiles != config.vision_config.max_num_tiles:
        fail(f"{tiles} tiles per image; Hugging Face takes {config.vision_config.max_num_tiles}")
    supported = config.vision_config.supported_aspect_ratios
    ids = torch.zeros(b, n_img, dtype=torch.long)
    ar_mask = torch.zeros(b, n_img, tiles, dtype=torch.long)
    for i in range(b):
        for j in range(n_img):
            rows, cols = aspect[i, j].tolist()
            ids[i, j] = supported.index([rows, cols]) + 1
            ar_mask[i, j, 0] = 1
            ar_mask[i, j, : rows * cols] = 1
            if images[i, j, rows * cols:].any():
                fail("a padding tile is not zero")
    tokens_per_tile = (TILE // PATCH) ** 2 + 1
    enc = batch["encoder_mask"]
    s = enc.shape[1]
    if enc.shape[2] != n_img * tiles * tokens_per_tile:
        fail(f"encoder_mask has {enc.shape[2]} columns")
    per_token = enc.view(b, s, n_img, tiles, tokens_per_tile)
    if not torch.equal(per_token, per_token[..., :1].expand_as(per_token)):
        fail("encoder_mask differs within a tile")
    cross = per_token[..., 0].long()
    if (cross.bool() & ~ar_mask.bool()[:, None]).any():
        fail("encoder_mask lets text see a padding tile")
    return {"input_ids": batch["tokens"], "pixel_values": images.float(), "aspect_ratio_ids": ids,
            "aspect_ratio_mask": ar_mask, "cross_attention_mask": cross}


def shift_labels(labels):
    # The recipe: labels = torch.hstack((labels[..., 1:], self.ignore_labels_cache[: labels.shape[0]])).
    return torch.hstack((labels[..., 1:], torch.full((labels.shape[0], 1), IGNORE, dtype=labels.dtype)))


# ----------------------------------------------------------------------------------------------
# Model
# ----------------------------------------------------------------------------------------------
def make_config(cross_layers=CROSS_LAYERS, text_layers=5, vision_intermediate=64):
    vision = MllamaVisionConfig(
        hidden_size=32, num_attention_heads=4, num_hidden_layers=3, num_global_layers=2,
        intermediate_size=vision_intermediate, image_size=TILE, patch_size=PATCH, max_num_tiles=MAX_TILES,
        intermediate_layers_indices=[0, 2], vision_output_dim=96, norm_eps=1e-5, num_channels=3,
    )
    text = MllamaTextConfig(
        vocab_size=VOCAB, hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
        num_hidden_layers=text_layers, cross_attention_layers=list(cross_layers), intermediate_size=64,
        rope_theta=500000.0,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
        max_position_embeddings=256, rms_norm_eps=1e-5, tie_word_embeddings=False, pad_token_id=PAD_TOKEN,
    )
    config = MllamaConfig(vision_config=vision.to_dict(), text_config=text.to_dict(), image_token_index=IMAGE_TOKEN)
    config.dtype = torch.float32
    return config


def trainability(key, cross_layers):
    """Which published parameters train under llama3_2_vision_11b's defaults: True, False, or
    "rows" for the text embedding, of which only rows [VOCAB, VOCAB + 8) train.

    In torchtune the vision side is DeepFusionModel.encoder (Llama3VisionEncoder: clip = Hugging
    Face's vision_model less global_transformer; projection = global_transformer + the
    multi_modal_projector), all trainable by encoder_trainable=True; no part of it is a registered
    fusion module in 0.6.1. The fusion params (get_fusion_params) are FusionLayer.fusion_layer =
    the cross-attention layers (Hugging Face's text layers in cross_attention_layers, gates and
    q/k norms included) and FusionEmbedding.fusion_embedding = the embedding rows past vocab_size;
    trainable by fusion_trainable=True. decoder_trainable=False freezes the rest of the decoder:
    the self-attention layers, tok_embeddings.embedding (rows [0, VOCAB)), norm and output."""
    if key.startswith(("vision_model.", "multi_modal_projector.")):
        return True
    if key == "language_model.model.embed_tokens.weight":
        return "rows"
    if key.startswith("language_model.model.layers."):
        return int(key.split(".")[3]) in cross_layers
    if key in ("language_model.model.norm.weight", "language_model.lm_head.weight"):
        return False
    fail(f"{key}: unknown parameter")


def check_trainability_against_torchtune():
    """Builds a tiny torchtune DeepFusionModel with llama3_2_vision_11b's trainable defaults, marks
    each parameter 1 if requires_grad else 0 and carries the marks through torchtune's own
    llama3_vision_tune_to_hf; every published key must then agree with trainability(). torchtune's
    decoder builder fuses cross-attention into its decoder layers idx = 1, 2, ... with
    idx % fusion_interval == 0, ahead of that layer's self-attention, so 4 layers with
    fusion_interval 2 are Hugging Face's 6 text layers with cross_attention_layers [1, 4]. (Its
    CLIP MLPs are 4 x embed_dim wide, so the comparison model's vision intermediate_size is 128.)"""
    defaults = {k: v.default for k, v in inspect.signature(llama3_2_vision_11b).parameters.items()
                if k.endswith("_trainable")}
    if defaults != {"decoder_trainable": False, "encoder_trainable": True, "fusion_trainable": True}:
        fail(f"llama3_2_vision_11b's trainable defaults are {defaults}")
    hf_cross = [1, 4]
    encoder = llama3_2_vision_encoder(
        patch_size=PATCH, num_heads=4, clip_embed_dim=32, clip_num_layers=3, clip_hidden_states=[0, 2],
        num_layers_projection=2, decoder_embed_dim=32, tile_size=TILE, max_num_tiles=MAX_TILES)
    decoder = llama3_2_vision_decoder(
        vocab_size=VOCAB, num_layers=4, fusion_interval=2, num_special_tokens=8, num_heads=4, num_kv_heads=2,
        embed_dim=32, max_seq_len=MAX_SEQ_LEN, encoder_max_seq_len=MAX_TILES * ((TILE // PATCH) ** 2 + 1),
        intermediate_dim=64)
    tune = DeepFusionModel(decoder, encoder, **defaults)
    marks = {k: torch.full(v.shape, float(v.requires_grad)) for k, v in tune.state_dict(keep_vars=True).items()}
    config = make_config(hf_cross, text_layers=6, vision_intermediate=128)
    hf_marks = llama3_vision_tune_to_hf(
        marks, num_heads=4, num_kv_heads=2, dim=32, vocab_size=VOCAB, cross_attention_layers=hf_cross,
        encoder_dim=32, tile_size=TILE, num_tiles=MAX_TILES,
        supported_aspect_ratios=config.vision_config.supported_aspect_ratios)
    with torch.device("meta"):
        reference = MllamaForConditionalGeneration._from_config(config, attn_implementation="eager")
    shapes = {}
    for name, p in reference.named_parameters():
        keys = [new + name[len(old):] for old, new in KEY_PREFIXES if name.startswith(old)]
        shapes[keys[0]] = tuple(p.shape)
    if set(hf_marks) != set(shapes):
        fail(f"torchtune's conversion gives other keys: {sorted(set(hf_marks) ^ set(shapes))}")
    for key, mark in hf_marks.items():
        if tuple(mark.shape) != shapes[key]:
            fail(f"{key}: torchtune converts to {tuple(mark.shape)}, Hugging Face has {shapes[key]}")
        want = trainability(key, hf_cross)
        if want == "rows":
            ok = not mark[:VOCAB].any() and bool(mark[VOCAB:].all())
        elif want:
            ok = bool(mark.any())   # the tile embeddings' id 0 and unused tiles are conversion padding
        else:
            ok = not mark.any()
        if not ok:
            fail(f"{key}: torchtune's trainability differs from {want}")
    return len(hf_marks)


# ----------------------------------------------------------------------------------------------
# The recipe's training loop (full_finetune_distributed, world size 1)
# ----------------------------------------------------------------------------------------------
def train(model, keys, batches, dtype):
    """Frozen parameters get requires_grad False and no optimizer state. The text embedding is one
    Hugging Face parameter of which torchtune trains only the fusion rows (a separate
    nn.Embedding there): the whole tensor goes to AdamW and rows [0, VOCAB) are copied back after
    every step. AdamW is elementwise (its step count is shared, but every trainable parameter
    steps together), so the trainable rows move exactly as a separate parameter would."""
    embed = model.model.language_model.embed_tokens.weight
    for name, p in model.named_parameters():
        p.requires_grad_(trainability(keys[name], CROSS_LAYERS) is not False)
    frozen_rows = embed.detach()[:VOCAB].clone()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=LR, betas=BETAS, eps=EPS, weight_decay=WEIGHT_DECAY, foreach=False)
    model.train()
    log, without_grad = [], set()
    opt.zero_grad(set_to_none=True)
    for step, batch in enumerate(batches, start=1):
        inputs = {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in batch["inputs"].items()}
        labels = batch["labels"]
        # The recipe counts the target tokens on the unshifted labels; they equal the shifted ones
        # because every sample's first label (BOS) is masked.
        num_tokens = int((labels != IGNORE).sum())
        shifted = shift_labels(labels)
        if int((shifted != IGNORE).sum()) != num_tokens:
            fail(f"step {step}: shifting drops a target token")
        logits = mllama_forward(model, inputs, meta_cross_attention=True, float64=dtype == torch.float64).logits
        # CEWithChunkedOutputLoss: F.cross_entropy(logits.float(), labels, reduction="sum") / the
        # number of targets, times current_num_tokens in the recipe: the summed cross entropy.
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).to(torch.promote_types(dtype, torch.float32)),
                               shifted.reshape(-1), ignore_index=IGNORE, reduction="sum")
        loss.backward()
        # training.scale_grads(model, world_size / num_tokens)
        scale = torch.tensor(1.0 / num_tokens, dtype=dtype)
        for name, p in model.named_parameters():
            if p.grad is not None:
                p.grad.mul_(scale)
            elif p.requires_grad:
                without_grad.add(keys[name])
        opt.step()
        opt.zero_grad(set_to_none=True)
        with torch.no_grad():
            embed[:VOCAB].copy_(frozen_rows)
        log.append({"step": step, "loss": loss.item() / num_tokens, "tokens": num_tokens})
    return log, without_grad


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=pathlib.Path)
    out = parser.parse_args().out_dir / "vision_golden"
    torch.set_num_threads(1)
    out.mkdir(parents=True, exist_ok=True)
    images_dir, data_json = out / "images", out / "data.json"

    worst_jpeg = write_images(images_dir)
    write_data(data_json)
    with tempfile.TemporaryDirectory() as cache_dir:  # a fresh datasets cache: never a stale one
        transform, samples = load_samples(data_json, images_dir, cache_dir)

    config = make_config()
    if config.vision_config.supported_aspect_ratios != [[1, 1], [1, 2], [1, 3], [1, 4], [2, 1], [2, 2], [3, 1], [4, 1]]:
        fail(f"supported_aspect_ratios is {config.vision_config.supported_aspect_ratios}")
    # The recipe's DataLoader: DistributedSampler(shuffle=False) over 1 rank, drop_last=True.
    steps = [list(range(i, i + BATCH_SIZE)) for i in range(0, len(samples) - BATCH_SIZE + 1, BATCH_SIZE)][:STEPS]
    batches = []
    for indices in steps:
        collated = collate(transform, samples, indices)
        batches.append({"collated": collated, "inputs": hf_inputs(collated, config), "labels": collated["labels"]})

    checked_keys = check_trainability_against_torchtune()

    torch.manual_seed(0)
    model = MllamaForConditionalGeneration._from_config(config, attn_implementation="eager").float()
    # std 0.05 for matrices and embeddings, so that training is well-behaved.
    redraw_parameters(model, matrix_std=0.05)
    keys = published_keys(model)
    initial = {keys[n]: p.detach().clone() for n, p in model.named_parameters()}
    model64 = copy.deepcopy(model).double()  # the same initial values, exactly

    model_dir = out / "mllama_tiny"
    model_dir.mkdir(exist_ok=True)
    config.save_pretrained(model_dir)
    save_file({k: v.contiguous() for k, v in initial.items()}, str(model_dir / "model.safetensors"),
              metadata={"format": "pt"})
    reloaded, info = MllamaForConditionalGeneration.from_pretrained(
        model_dir, dtype="auto", attn_implementation="eager", output_loading_info=True)
    state = model.state_dict()
    if any(info.values()) or any(not torch.equal(v, state[k]) for k, v in reloaded.state_dict().items()):
        fail(f"from_pretrained does not read the weights back: {info}")
    del reloaded

    log32, no_grad32 = train(model, keys, batches, torch.float32)
    log64, _ = train(model64, published_keys(model64), batches, torch.float64)
    if no_grad32:
        fail(f"trainable parameters without a gradient: {sorted(no_grad32)}")
    rel = max(abs(a["loss"] - b["loss"]) / abs(b["loss"]) for a, b in zip(log32, log64))
    if not rel <= FP64_LOSS_TOLERANCE:
        fail(f"float32 and float64 losses differ by {rel:.3e} (relative), more than {FP64_LOSS_TOLERANCE}")

    final = {keys[n]: p.detach().clone() for n, p in model.named_parameters()}
    final64 = {keys[n]: p.detach() for n, p in model64.named_parameters()}
    unchanged, trainable = [], []
    for key in final:
        mode = trainability(key, CROSS_LAYERS)
        if mode == "rows":
            if not torch.equal(final[key][:VOCAB], initial[key][:VOCAB]):
                fail(f"{key}: frozen rows changed")
            if torch.equal(final[key][VOCAB:], initial[key][VOCAB:]):
                fail(f"{key}: the fusion rows did not train")
        elif mode:
            trainable.append(key)
            if torch.equal(final[key], initial[key]):
                fail(f"{key} did not change")
        else:
            unchanged.append(key)
            if not torch.equal(final[key], initial[key]):
                fail(f"{key} is frozen but changed")
    weight_rel = max(((final[k].double() - final64[k]).abs().max() / final64[k].abs().max()).item()
                     for k in trainable)

    with open(out / "expected.jsonl", "w") as f:
        for row in log32:
            f.write(json.dumps(row) + "\n")
    save_file({k: v.contiguous() for k, v in final.items()}, str(out / "final.safetensors"), metadata={"format": "pt"})
    (out / "initial_equals_final.json").write_text(json.dumps({
        "unchanged": sorted(unchanged),
        "unchanged_rows": {"language_model.model.embed_tokens.weight": {
            "rows": [0, VOCAB], "note": f"rows [0, {VOCAB}) unchanged; rows [{VOCAB}, {VOCAB + 8}) train"}},
        "trainable": sorted(trainable),
    }, indent=1) + "\n")
    first = batches[0]
    collated = first["collated"]
    save_file({
        "tokens": collated["tokens"], "labels": collated["labels"],
        "images": collated["encoder_input"]["images"], "aspect_ratio": collated["encoder_input"]["aspect_ratio"],
        "encoder_mask": collated["encoder_mask"], "shifted_labels": shift_labels(collated["labels"]),
        **{k: v.contiguous() for k, v in first["inputs"].items() if k != "input_ids"},
    }, str(out / "batches.safetensors"), metadata={"format": "pt", "samples": json.dumps(steps[0])})
    with open(out / "samples.jsonl", "w") as f:
        for (name, _, _), s in zip(IMAGES, samples):
            f.write(json.dumps({"image": name, "tokens": s["tokens"], "labels": [int(x) for x in s["labels"]],
                                "aspect_ratio": s["encoder_input"]["aspect_ratio"][0].tolist(),
                                "tiles": s["encoder_input"]["images"][0].shape[0]}) + "\n")

    print(f"{out}: {len(final)} parameters ({len(trainable)} trainable + the embedding's fusion rows, "
          f"{len(unchanged)} frozen); torchtune's trainability agrees on all {checked_keys} keys")
    print(f"JPEG read-back differs from the written pattern by up to {worst_jpeg} (PNG: 0)")
    for (name, w, h), s in zip(IMAGES, samples):
        print(f"  {name} {w}x{h}: tiles (rows, cols) {tuple(s['encoder_input']['aspect_ratio'][0].tolist())}, "
              f"{len(s['tokens'])} tokens, image token at {s['tokens'].index(IMAGE_TOKEN)}, "
              f"{sum(1 for x in s['labels'] if x != IGNORE)} targets")
    example = samples[1]
    print("sample 1 decoded:", repr(transform.decode(example["tokens"], truncate_at_eos=False, skip_special_tokens=False)))
    print("sample 1 tokens:", example["tokens"])
    print("batch 1 shapes:", {k: (tuple(v.shape), str(v.dtype)) for k, v in [
        ("tokens", collated["tokens"]), ("labels", collated["labels"]),
        ("images", collated["encoder_input"]["images"]), ("aspect_ratio", collated["encoder_input"]["aspect_ratio"]),
        ("encoder_mask", collated["encoder_mask"])]})
    for a, b in zip(log32, log64):
        print(f"  step {a['step']}: loss {a['loss']:.8f} (float64 {b['loss']:.8f}), {a['tokens']} target tokens")
    print(f"float32 vs float64: losses {rel:.3e} (relative), final trainable weights {weight_rel:.3e} "
          f"(max abs difference / max abs, per tensor)")


if __name__ == "__main__":
    try:
        main()
    except Exception as error:
        sys.exit(f"make_vision_golden: {type(error).__name__}: {error}")
