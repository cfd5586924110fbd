#!/usr/bin/env python3
"""A tiny Llama 4 with images (Hugging Face's Llama4ForConditionalGeneration) in float64, for the
C++ model's tests.

  .venv/bin/python tests/vision_references/make_llama4_references.py OUT_DIR

Writes OUT_DIR/llama4_tiny/:
- config.json: Llama4Config. Text: tests/golden/make_family_goldens.py's LLAMA4_TEXT_KW (4 layers,
  mixture-of-experts every second layer, chunked attention in chunks of 8 on the rotary layers,
  NoPE layers with temperature tuning, q/k L2 norm, llama3 RoPE scaling). Vision: 16-pixel tiles of
  4-pixel patches (a 4 x 4 grid, folded 2 x 2 by the pixel shuffle into 4 features per tile),
  2 layers of 2 heads of width 8, projector width 24; image token 255.
- model.safetensors: every parameter in float64 under the published layout of
  meta-llama/Llama-4-Scout-17B-16E (vision_model.*, multi_modal_projector.*,
  language_model.model.*, language_model.lm_head.weight).
- case.safetensors: two samples of 24 tokens; sample 0 holds one image of 3 tiles (a 2 x 1 canvas
  and its thumbnail: 12 image tokens), sample 1 one image of 1 tile (4 image tokens), between
  text. The inputs (input_ids, pixel_values [4, 3, 16, 16] in the order of the image tokens,
  labels with -100 on the image tokens and the first text), "image_features" (the projected
  features that replace the image tokens' embeddings, [16, 64]), "logits", "loss" (Hugging
  Face's: mean cross entropy of the labels shifted by one, -100 ignored) and, after
  loss.backward(), "grad.<key>" for every parameter.

And OUT_DIR/llama4_trainable/ (config.json, model.safetensors in float32): a model for training
runs through llama4_transform, whose token ids reach 202047 and whose tiles are 14-pixel patches:
text vocabulary 202048, width 32, 2 layers (the second a mixture of experts); vision tiles of 28
pixels (2 x 2 patches, one feature per tile after the pixel shuffle), 1 layer; image token
200092 (<|patch|>). trainable_config and trainable_model build it; make_llama4_golden.py builds its
golden trajectory's model with them at tiles of 56 pixels. OUT_DIR/llama4_trainable_tp8/: the
same with 8 heads and 8 key-value heads of width 4, for 8 tensor-parallel ranks.

Every parameter is redrawn from a seeded normal (norm weights near 1), so that a parameter read
into the wrong place changes the outputs.

Float64: Hugging Face computes the vision rotary embedding in float32 (complex64) whatever the
model's dtype, and softmax, RMSNorm and the text RoPE tables in float32; here every float32 that
transformers asks for becomes float64, and the vision rotary table is recomputed in float64 from
the same formula (frequencies theta^(-4i / head_dim), angles (column + 1) and (row + 1) times
them, the class token unturned).
"""
import argparse
import pathlib
import sys

import torch
from safetensors.torch import save_file
from transformers import Llama4Config, Llama4ForConditionalGeneration

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "golden"))
from make_family_goldens import LLAMA4_TEXT_KW  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_mllama_references import Float64Mode  # noqa: E402  (every float32 transformers asks for as float64)

IMAGE_TOKEN = 255
BEGIN_IMAGE, END_IMAGE = 253, 254
SEQ_LEN = 24
TILE, PATCH = 16, 4
FEATURES_PER_TILE = 4
# Each sample's image as the number of tiles it gives the model (its canvas's and the thumbnail).
TILES = [3, 1]


def make_config():
    vision = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                  num_channels=3, image_size=TILE, patch_size=PATCH, pixel_shuffle_ratio=0.5,
                  projector_input_dim=24, projector_output_dim=24, vision_output_dim=24, norm_eps=1e-5,
                  rope_theta=10000, hidden_act="gelu", attention_dropout=0.0, projector_dropout=0.0,
                  multi_modal_projector_bias=False)
    return Llama4Config(text_config=LLAMA4_TEXT_KW, vision_config=vision, boi_token_index=BEGIN_IMAGE,
                        eoi_token_index=END_IMAGE, image_token_index=IMAGE_TOKEN, tie_word_embeddings=False)


def vision_rotary_float64(config):
    """Llama4VisionRotaryEmbedding's table, computed in float64."""
    side = config.image_size // config.patch_size
    index = torch.arange(side * side, dtype=torch.float64)
    freq_dim = config.hidden_size // config.num_attention_heads // 2
    freqs = 1.0 / (config.rope_theta ** (torch.arange(0, freq_dim, 2, dtype=torch.float64)[: freq_dim // 2] / freq_dim))
    angles = torch.cat([((index % side) + 1)[:, None] * freqs, ((index // side) + 1)[:, None] * freqs], dim=1)
    angles = torch.cat([angles, torch.zeros(1, angles.shape[1], dtype=torch.float64)])  # the class token
    return torch.polar(torch.ones_like(angles), angles)[:, None, :]


def redraw_parameters(model):
    gen = torch.Generator().manual_seed(4)
    norm_weights = {id(m.weight) for m in model.modules()
                    if isinstance(m, torch.nn.LayerNorm) or type(m).__name__.endswith("RMSNorm")}
    with torch.no_grad():
        for name, p in model.named_parameters():
            normal = torch.randn(p.shape, generator=gen, dtype=torch.float64)
            if id(p) in norm_weights:
                p.copy_(1 + 0.1 * normal)
            elif name.endswith(".bias"):
                p.copy_(0.1 * normal)
            else:
                p.copy_(0.2 * normal)


def make_inputs():
    gen = torch.Generator().manual_seed(5)
    ids = torch.randint(3, 250, (2, SEQ_LEN), generator=gen)
    labels = ids.clone()
    # Sample 0: text, <|image_start|>, 12 image tokens, <|image_end|>, text.
    ids[0, 3] = BEGIN_IMAGE
    ids[0, 4:16] = IMAGE_TOKEN
    ids[0, 16] = END_IMAGE
    # Sample 1: 4 image tokens late in the row, across an attention chunk boundary.
    ids[1, 13] = BEGIN_IMAGE
    ids[1, 14:18] = IMAGE_TOKEN
    ids[1, 18] = END_IMAGE
    labels[ids == IMAGE_TOKEN] = -100
    labels[:, :2] = -100
    pixels = torch.randn(sum(TILES), 3, TILE, TILE, generator=gen, dtype=torch.float64)
    return ids, labels, pixels


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", type=pathlib.Path)
    out = parser.parse_args().out_dir / "llama4_tiny"
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    config = make_config()
    config._attn_implementation = "eager"
    config.text_config._attn_implementation = "eager"
    config.vision_config._attn_implementation = "eager"
    model = Llama4ForConditionalGeneration(config).to(torch.float64)
    redraw_parameters(model)
    model.vision_model.rotary_embedding.freqs_ci = vision_rotary_float64(config.vision_config)
    model.train()

    ids, labels, pixels = make_inputs()
    if int((ids == IMAGE_TOKEN).sum()) != sum(TILES) * FEATURES_PER_TILE:
        raise ValueError("image tokens and tiles disagree")
    captured = {}
    projector = model.multi_modal_projector

    def keep_features(module, inputs, output):
        captured["image_features"] = output.detach().clone()  # returning nothing keeps the output

    projector.register_forward_hook(keep_features)
    with Float64Mode():
        result = model(input_ids=ids, pixel_values=pixels, labels=labels, use_cache=False)
    result.loss.backward()

    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    names = set(state)
    if names != set(dict(model.named_parameters())):
        raise ValueError("the state dict is not exactly the parameters")
    for prefix in ("vision_model.", "multi_modal_projector.", "language_model.model.", "language_model.lm_head."):
        if not any(n.startswith(prefix) for n in names):
            raise ValueError(f"no parameter under {prefix}: the published layout changed")
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    config.save_pretrained(str(out))

    case = {"input_ids": ids, "labels": labels, "pixel_values": pixels,
            "image_features": captured["image_features"], "logits": result.logits.detach(),
            "loss": result.loss.detach().reshape(1)}
    for name, p in model.named_parameters():
        case["grad." + name] = (p.grad if p.grad is not None else torch.zeros_like(p)).detach().contiguous()
    save_file({k: v.contiguous() for k, v in case.items()}, str(out / "case.safetensors"))
    print(f"{out}: loss {result.loss.item():.12f}, {len(state)} parameters")
    make_trainable(parser.parse_args().out_dir)


def trainable_config(image_size=28, heads=4, kv_heads=2):
    """The training runs' config: Llama 4's token ids (text vocabulary 202048, image token 200092),
    width 32 in `heads` heads (`kv_heads` of keys and values), 2 layers (the second a mixture of
    experts); a 1-layer vision tower of 14-pixel patches on tiles of image_size pixels."""
    text = dict(LLAMA4_TEXT_KW, vocab_size=202048, hidden_size=32, intermediate_size=16, intermediate_size_mlp=48,
                num_hidden_layers=2, num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=32 // heads,
                no_rope_layers=[1, 0], max_position_embeddings=8192, bos_token_id=200000, eos_token_id=200001,
                pad_token_id=200018)
    vision = dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, num_channels=3,
                  image_size=image_size, patch_size=14, pixel_shuffle_ratio=0.5, projector_input_dim=24,
                  projector_output_dim=24, vision_output_dim=24, norm_eps=1e-5, rope_theta=10000, hidden_act="gelu",
                  attention_dropout=0.0, projector_dropout=0.0, multi_modal_projector_bias=False)
    return Llama4Config(text_config=text, vision_config=vision, boi_token_index=200080, eoi_token_index=200081,
                        image_token_index=200092, tie_word_embeddings=False)


def trainable_model(config):
    """A float32 Llama4ForConditionalGeneration of config, every parameter but the norms redrawn
    from a seeded N(0, 0.05^2)."""
    torch.manual_seed(1)
    model = Llama4ForConditionalGeneration(config)
    with torch.no_grad():
        gen = torch.Generator().manual_seed(6)
        for name, p in model.named_parameters():
            if "norm" not in name:
                p.copy_(0.05 * torch.randn(p.shape, generator=gen))
    return model


def make_trainable(out_dir):
    """The training runs' models: Llama 4's token ids, tiles of 28 pixels in 14-pixel patches;
    llama4_trainable_tp8 with 8 heads and 8 key-value heads of 4, which 8 tensor-parallel ranks
    (Maverick's YAML) split."""
    for name, heads, kv_heads in (("llama4_trainable", 4, 2), ("llama4_trainable_tp8", 8, 8)):
        out = out_dir / name
        out.mkdir(parents=True, exist_ok=True)
        config = trainable_config(heads=heads, kv_heads=kv_heads)
        model = trainable_model(config)
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(out / "model.safetensors"),
                  metadata={"format": "pt"})
        config.save_pretrained(str(out))


if __name__ == "__main__":
    main()
