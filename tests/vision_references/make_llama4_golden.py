#!/usr/bin/env python3
"""A golden training trajectory for a tiny Llama 4 with images (Hugging Face's
Llama4ForConditionalGeneration), for fthost's Llama 4 vision training tests.

  .venv/bin/python tests/vision_references/make_llama4_golden.py OUT_DIR

Writes OUT_DIR/llama4_golden/:
- llama4_tiny/{config.json, model.safetensors}: the initial model in float32 under the published
  layout of meta-llama/Llama-4-Scout-17B-16E (vision_model.*, multi_modal_projector.*,
  language_model.model.*, language_model.lm_head.weight): make_llama4_references.py's
  trainable_config and trainable_model (llama4_trainable's text model: vocabulary 202048, width 32,
  2 layers, the second a mixture of 4 experts, top 1; image token 200092, <|patch|>) with tiles of
  56 pixels in 14-pixel patches (a 4 x 4 grid, folded 2 x 2 by the pixel shuffle into 4 features
  per tile, the 4 <|patch|> tokens per tile of the data).
- expected.jsonl: per optimizer step {"step", "loss", "tokens"}.
- final.safetensors: every parameter after the last step (published names, float32).
- initial_equals_final.json: "unchanged", the published names that training must leave bitwise
  unchanged (the frozen encoder), and "trainable", the ones that must change.
- measured.json: what the script measured (float32 against float64, the routers' margins).

Data: the kept outputs of torchtune's own Llama 4 data path (tests/vision_references/llama4_data/,
make_llama4_data_references.py: The Cauldron's 4 records through the_cauldron_dataset and
llama4_transform(image_size=56, max_num_tiles=16)): each sample's tokens, unshifted labels and
bfloat16 tiles ("full.i.*"), which fthost's tests read from cauldron.parquet through its own
the_cauldron_dataset and llama4_transform (tests/unit/llama4_data_test.cpp checks them equal).

The training run mirrors torchtune's recipes/full_finetune_distributed.py at world size 1 (the
semantics make_vision_golden.py mirrors for Llama 3.2 Vision):
- samples in dataset order (shuffle off), batch size 2, drop_last, gradient accumulation 1,
  2 epochs of 2 steps, the second epoch in the first's order (DistributedSampler(shuffle=False)).
- the batch as torchtune's padded_collate_tiled_images_and_mask collates it: the text by its
  padded_collate_sft (tokens padded right with the pad id, labels with -100); the images go to
  Hugging Face's model as pixel_values, the real tiles of every image (its canvas's, then the
  thumbnail) in the order of their <|patch|> tokens (sample, image, tile), no padding tiles, the
  bfloat16 tiles widened exactly. (torchtune main's EarlyFusionModel would scatter the padding
  tiles' features too: docs/parity.md.)
- trainable parameters: torchtune's llama4_scout_17b_16e defaults (decoder_trainable=True,
  encoder_trainable=False, fusion_trainable=True) as its EarlyFusionModel applies them: the decoder
  is language_model.*; the encoder (Llama4VisionEncoder.clip) is vision_model.* less the
  vision_adapter; the fusion parameters (Llama4VisionEncoder.projection, a registered fusion
  module) are vision_model.vision_adapter.* and multi_modal_projector.*. Where torchtune's source
  is found (make_llama4_data_references.py's git mirror), the split is checked against a tiny
  torchtune EarlyFusionModel's requires_grad carried through its llama4_tune_to_hf.
- loss: the recipe's; labels shifted left by one with -100 appended, cross entropy of float32
  logits summed over the target tokens, gradients scaled by 1 / the step's number of target
  tokens; logged loss = summed loss / that number. No router load-balancing loss (the config's
  output_router_logits is false, as in tests/golden/make_family_goldens.py's Llama 4 goldens).
- optimizer: torch.optim.AdamW(lr 2e-3, betas (0.9, 0.999), eps 1e-8, weight decay 0.01) over the
  trainable parameters only; no gradient clipping, no learning rate schedule.

Hugging Face's code as it is (eager attention). The same training repeated in float64 (every
float32 that transformers asks for made float64 by make_mllama_references.py's Float64Mode, the
vision rotary table recomputed in float64 by make_llama4_references.py's vision_rotary_float64)
must reproduce every step's loss to FP64_LOSS_TOLERANCE relative and route every token to the same
expert, or the script fails; so must every router's top-1 margin stay above
make_family_goldens.py's ROUTER_GAP_MIN_REL, so that another float32 implementation routes alike.
"""
import argparse
import copy
import inspect
import json
import os
import pathlib
import sys
import tempfile
import time
import types

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import torch
import torch.nn.functional as F
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import Llama4ForConditionalGeneration

from torchtune.data import padded_collate_sft

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "golden"))
sys.path.insert(0, str(HERE))
from make_family_goldens import ROUTER_GAP_MIN_REL, RunProbe  # noqa: E402
from make_llama4_data_references import KEPT, import_torchtune, torchtune_source  # noqa: E402
from make_llama4_references import trainable_config, trainable_model, vision_rotary_float64  # noqa: E402
from make_mllama_references import Float64Mode  # noqa: E402
from make_vision_golden import IGNORE, shift_labels  # noqa: E402

IMAGE_SIZE, MAX_NUM_TILES = 56, 16     # llama4_transform's, as the kept samples were made
BATCH_SIZE, EPOCHS = 2, 2
LR, BETAS, EPS, WEIGHT_DECAY = 2e-3, (0.9, 0.999), 1e-8, 0.01
FP64_LOSS_TOLERANCE = 1e-6             # relative; measured 6.9e-8 (measured.json)


def fail(message):
    raise RuntimeError(message)


# ----------------------------------------------------------------------------------------------
# Data: the kept samples of torchtune's llama4_transform
# ----------------------------------------------------------------------------------------------
def load_samples(config):
    """The kept samples (tokens, unshifted labels, each image's bfloat16 tiles) and their metadata,
    checked against the model: tile size, <|patch|> id and count, pad id."""
    with safe_open(str(KEPT / "references.safetensors"), "pt") as f:
        meta = json.loads(f.metadata()["meta"])
        tensors = {k: f.get_tensor(k) for k in f.keys() if k.startswith("full.")}
    vision = config.vision_config
    per_tile = (vision.image_size // vision.patch_size) ** 2 * vision.pixel_shuffle_ratio ** 2
    if (meta["image_size"], meta["max_num_tiles"]) != (IMAGE_SIZE, MAX_NUM_TILES) or vision.image_size != IMAGE_SIZE:
        fail(f"the kept samples are {meta['image_size']} px tiles, at most {meta['max_num_tiles']}")
    if meta["patch_tokens_per_tile"] != per_tile:
        fail(f"{meta['patch_tokens_per_tile']} <|patch|> tokens per tile, the model gives {per_tile} features")
    if meta["ids"]["patch"] != config.image_token_index or meta["ids"]["pad"] != config.text_config.pad_token_id:
        fail(f"the data's ids {meta['ids']} are not the model's")
    samples = []
    for i in range(meta["samples"]):
        tokens, labels = tensors[f"full.{i}.tokens"], tensors[f"full.{i}.labels"]
        tiles = [tensors[f"full.{i}.image.{j}.tiles"] for j in range(meta["images"][i])]
        if int((tokens == config.image_token_index).sum()) != sum(t.shape[0] for t in tiles) * per_tile:
            fail(f"sample {i}: <|patch|> tokens and tiles disagree")
        if labels[0] != IGNORE:
            fail(f"sample {i}: the first label is a target, which the recipe's count keeps and its shift drops")
        samples.append({"tokens": tokens.tolist(), "labels": labels.tolist(), "tiles": tiles})
    return meta, samples


def collate(samples, pad_id):
    """padded_collate_tiled_images_and_mask's text (its padded_collate_sft, right padding), and the
    real tiles in <|patch|> order as Hugging Face's model takes them."""
    text = padded_collate_sft([{"tokens": s["tokens"], "labels": s["labels"]} for s in samples],
                              padding_idx=pad_id, ignore_idx=IGNORE)
    pixels = torch.cat([t for s in samples for t in s["tiles"]])
    return {"input_ids": text["tokens"], "labels": text["labels"], "pixel_values": pixels}


# ----------------------------------------------------------------------------------------------
# Model
# ----------------------------------------------------------------------------------------------
def trainability(key):
    """True where llama4_scout_17b_16e's defaults train the published parameter key (see the
    docstring): the decoder and the fusion parameters; the encoder is frozen."""
    if key.startswith(("vision_model.vision_adapter.", "multi_modal_projector.")):
        return True   # fusion_trainable=True
    if key.startswith("vision_model."):
        return False  # encoder_trainable=False
    if key.startswith("language_model."):
        return True   # decoder_trainable=True
    fail(f"{key}: unknown parameter")


def check_split_against_torchtune(hf_keys):
    """Where torchtune's source is found: a tiny torchtune EarlyFusionModel (llama4_decoder with a
    dense and a mixture-of-experts layer, llama4_vision_encoder) built with llama4_scout_17b_16e's
    trainable defaults; each parameter marked 1 if requires_grad, the marks carried through
    torchtune's llama4_tune_to_hf; every published key must agree with trainability(). Returns the
    number of keys checked, or None without torchtune's source."""
    with tempfile.TemporaryDirectory() as tmp:
        source = torchtune_source(pathlib.Path(tmp) / "src")
        if source is None:
            return None
        import_torchtune(source)
        from torchtune.models.llama4 import llama4_scout_17b_16e
        from torchtune.models.llama4._component_builders import llama4_decoder, llama4_vision_encoder
        from torchtune.models.llama4._convert_weights import llama4_tune_to_hf
        from torchtune.modules.model_fusion import EarlyFusionModel
    defaults = {k: v.default for k, v in inspect.signature(llama4_scout_17b_16e).parameters.items()
                if k.endswith("_trainable")}
    if defaults != {"decoder_trainable": True, "encoder_trainable": False, "fusion_trainable": True}:
        fail(f"llama4_scout_17b_16e's trainable defaults are {defaults}")
    decoder = llama4_decoder(vocab_size=256, num_layers=2, num_heads=4, num_kv_heads=2, embed_dim=32, hidden_dim=16,
                             max_seq_len=64, num_experts=4, moe_every_n_layers=2, mlp_hidden_dim=48,
                             skip_rope_interval=2, attention_chunk_size=8)
    encoder = llama4_vision_encoder(patch_size=14, num_heads=2, clip_embed_dim=16, clip_num_layers=1,
                                    projection_embed_dim=24, decoder_embed_dim=32, tile_size=IMAGE_SIZE,
                                    max_num_tiles=MAX_NUM_TILES)
    tune = EarlyFusionModel(decoder, {"vision": encoder}, encoder_tokens={"vision": 200092},
                            encoders_trainable={"vision": defaults["encoder_trainable"]},
                            decoder_trainable=defaults["decoder_trainable"],
                            fusion_trainable=defaults["fusion_trainable"])
    marks = llama4_tune_to_hf({n: torch.full(p.shape, float(p.requires_grad)) for n, p in tune.named_parameters()})
    if set(marks) != set(hf_keys):
        fail(f"torchtune's conversion gives other keys: {sorted(set(marks) ^ set(hf_keys))}")
    for key, mark in marks.items():
        if not (bool(mark.all()) if trainability(key) else not mark.any()):
            fail(f"{key}: torchtune's split differs from trainable={trainability(key)}")
    return len(marks)


# ----------------------------------------------------------------------------------------------
# The recipe's training loop (full_finetune_distributed, world size 1)
# ----------------------------------------------------------------------------------------------
def train(model, batches, dtype, routing):
    """Frozen parameters get requires_grad False and no optimizer state. routing: a list that
    receives each router call's top-1 experts."""
    for name, p in model.named_parameters():
        p.requires_grad_(trainability(name))
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=LR, betas=BETAS, eps=EPS, weight_decay=WEIGHT_DECAY, foreach=False)
    hooks = [m.register_forward_hook(lambda mod, inp, out: routing.append(out[1].detach().argmax(-1)))
             for m in model.modules() if type(m).__name__ == "Llama4Router"]
    model.train()
    log, without_grad = [], set()
    opt.zero_grad(set_to_none=True)
    for step, batch in enumerate(batches, start=1):
        labels = batch["labels"]
        num_tokens = int((labels != IGNORE).sum())  # the recipe counts on the unshifted labels
        shifted = shift_labels(labels)
        if int((shifted != IGNORE).sum()) != num_tokens:
            fail(f"step {step}: shifting drops a target token")
        if dtype == torch.float64:
            with Float64Mode():
                logits = model(input_ids=batch["input_ids"], pixel_values=batch["pixel_values"].double(),
                               use_cache=False).logits
                loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), shifted.reshape(-1),
                                       ignore_index=IGNORE, reduction="sum")
        else:
            logits = model(input_ids=batch["input_ids"], pixel_values=batch["pixel_values"].float(),
                           use_cache=False).logits
            # CEWithChunkedOutputLoss: cross entropy of logits.float(), summed over the targets.
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), shifted.reshape(-1),
                                   ignore_index=IGNORE, reduction="sum")
        loss.backward()
        scale = torch.tensor(1.0 / num_tokens, dtype=dtype)  # training.scale_grads(model, 1 / num_tokens)
        for name, p in model.named_parameters():
            if p.grad is not None:
                p.grad.mul_(scale)
            elif p.requires_grad:
                without_grad.add(name)
        opt.step()
        opt.zero_grad(set_to_none=True)
        log.append({"step": step, "loss": loss.item() / num_tokens, "tokens": num_tokens})
    for h in hooks:
        h.remove()
    return log, without_grad


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=pathlib.Path)
    out = parser.parse_args().out_dir / "llama4_golden"
    started = time.monotonic()
    torch.set_num_threads(1)
    out.mkdir(parents=True, exist_ok=True)

    config = trainable_config(image_size=IMAGE_SIZE)
    config._attn_implementation = "eager"
    config.text_config._attn_implementation = "eager"
    config.vision_config._attn_implementation = "eager"
    text = config.text_config
    if not text.moe_layers or text.output_router_logits or text.router_jitter_noise:
        fail(f"the text model needs a mixture-of-experts layer, no load-balancing loss, no router noise: "
             f"{text.moe_layers}, {text.output_router_logits}, {text.router_jitter_noise}")
    meta, samples = load_samples(config)

    # The recipe's DataLoader: DistributedSampler(shuffle=False) over 1 rank, drop_last, each epoch
    # in the same order.
    order = [list(range(i, i + BATCH_SIZE)) for i in range(0, len(samples) - BATCH_SIZE + 1, BATCH_SIZE)] * EPOCHS
    batches = [collate([samples[i] for i in indices], text.pad_token_id) for indices in order]

    model = trainable_model(config)
    initial = {n: p.detach().clone() for n, p in model.named_parameters()}
    if set(initial) != set(model.state_dict()):
        fail("the state dict is not exactly the parameters")
    model64 = copy.deepcopy(model).double()  # the same initial values, exactly
    model64.vision_model.rotary_embedding.freqs_ci = vision_rotary_float64(config.vision_config)
    checked_keys = check_split_against_torchtune(list(initial))

    model_dir = out / "llama4_tiny"
    model_dir.mkdir(exist_ok=True)
    config.save_pretrained(model_dir)
    save_file({k: v.contiguous() for k, v in initial.items()}, str(model_dir / "model.safetensors"),
              metadata={"format": "pt"})
    reloaded, info = Llama4ForConditionalGeneration.from_pretrained(model_dir, dtype="auto",
                                                                    output_loading_info=True)
    if any(info.values()) or any(not torch.equal(v, initial[k]) for k, v in reloaded.state_dict().items()):
        fail(f"from_pretrained does not read the weights back: {info}")
    del reloaded

    probe = RunProbe(types.SimpleNamespace(torch=torch), config)
    probe.phase = "training"
    probe.attach(model)
    routes32, routes64 = [], []
    log32, no_grad32 = train(model, batches, torch.float32, routes32)
    probe.detach()
    log64, _ = train(model64, batches, torch.float64, routes64)
    if no_grad32:
        fail(f"trainable parameters without a gradient: {sorted(no_grad32)}")
    flips = sum(int((a != b).sum()) for a, b in zip(routes32, routes64))
    if len(routes32) != len(routes64) or flips:
        fail(f"float32 and float64 route {flips} token(s) to other experts")
    if probe.min_rel < ROUTER_GAP_MIN_REL:
        fail(f"a router's top two logits come within {probe.min_rel:.3g} (relative to the logits' rms) at "
             f"{probe.where}; another float32 implementation could route otherwise: change the fixture")
    loss_rel = [abs(a["loss"] - b["loss"]) / abs(b["loss"]) for a, b in zip(log32, log64)]
    if not max(loss_rel) <= FP64_LOSS_TOLERANCE:
        fail(f"float32 and float64 losses differ by {max(loss_rel):.3e} (relative), more than {FP64_LOSS_TOLERANCE}")

    final = {n: p.detach().clone() for n, p in model.named_parameters()}
    final64 = {n: p.detach() for n, p in model64.named_parameters()}
    unchanged, trainable = [], []
    for key in final:
        if trainability(key):
            trainable.append(key)
            if torch.equal(final[key], initial[key]):
                fail(f"{key} did not change")
        else:
            unchanged.append(key)
            if not torch.equal(final[key], initial[key]):
                fail(f"{key} is frozen but changed")
    weight_abs = {k: (final[k].double() - final64[k]).abs().max().item() for k in trainable}
    moved = {k: (final64[k] - initial[k].double()).abs().max().item() for k in trainable}
    # The difference as a share of the update: ||float32 - float64|| / ||float64 - initial||.
    update_rel = {k: ((final[k].double() - final64[k]).norm() / (final64[k] - initial[k].double()).norm()).item()
                  for k in trainable}

    with open(out / "expected.jsonl", "w") as f:
        for row in log32:
            f.write(json.dumps(row) + "\n")
    save_file({k: v.contiguous() for k, v in final.items()}, str(out / "final.safetensors"), metadata={"format": "pt"})
    (out / "initial_equals_final.json").write_text(json.dumps(
        {"unchanged": sorted(unchanged), "trainable": sorted(trainable)}, indent=1) + "\n")
    worst = max(weight_abs, key=weight_abs.get)
    measured = {
        "samples_per_step": order,
        "fp32_vs_fp64": {"loss_rel_per_step": loss_rel, "final_weight_max_abs": weight_abs[worst],
                         "final_weight_max_abs_at": worst, "route_differences": flips,
                         "final_weight_update_rel_norm": max(update_rel.values()),
                         "final_weight_update_rel_norm_at": max(update_rel, key=update_rel.get)},
        "final_weight_max_abs_move": max(moved.values()),
        "float64_losses": [row["loss"] for row in log64],
        "router_gap": probe.record()["router_gap"],
        "torchtune_split_checked_keys": checked_keys,
    }
    (out / "measured.json").write_text(json.dumps(measured, indent=1) + "\n")

    print(f"{out}: {len(final)} parameters ({len(trainable)} trainable, {len(unchanged)} frozen); "
          + (f"torchtune's split agrees on all {checked_keys} keys" if checked_keys else
             "torchtune's source not found: the split is not checked against it"))
    for indices, batch in zip(order, batches):
        print(f"  samples {indices}: tokens {tuple(batch['input_ids'].shape)}, "
              f"{batch['pixel_values'].shape[0]} tiles")
    for a, b in zip(log32, log64):
        print(f"  step {a['step']}: loss {a['loss']:.8f} (float64 {b['loss']:.8f}), {a['tokens']} target tokens")
    print(f"float32 vs float64: losses {max(loss_rel):.3e} (relative), final trainable weights {weight_abs[worst]:.3e} "
          f"(max abs, {worst}; the weights move by up to {max(moved.values()):.3e}); same experts for every token; "
          f"smallest router top-1 margin {probe.min_rel:.3e} of the logits' rms")
    print(f"{time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    try:
        main()
    except Exception as error:
        sys.exit(f"make_llama4_golden: {type(error).__name__}: {error}")
