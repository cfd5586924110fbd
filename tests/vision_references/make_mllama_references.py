#!/usr/bin/env python3
"""A tiny Llama 3.2 Vision (Hugging Face's Mllama) in float64, for the C++ vision model's tests.

  .venv/bin/python tests/vision_references/make_mllama_references.py OUT_DIR

Writes OUT_DIR/mllama_tiny/:
- config.json: MllamaConfig (vision: 3 local layers with intermediate outputs 0 and 2, 2 gated
  global layers, 28 px tiles of 14 px patches, at most 4 tiles; text: 5 layers of which 1 and 3
  are cross-attention, 4 query and 2 key/value heads, llama3 RoPE scaling; image token 300, the
  first of the 8 rows the text embedding has beyond vocab_size).
- model.safetensors: every parameter in float64 under the published layout of
  meta-llama/Llama-3.2-11B-Vision (vision_model.*, multi_modal_projector.*,
  language_model.model.*, language_model.lm_head.weight); from_pretrained reads it back.
- case.safetensors: a batch of two samples. Sample 0 has images of 2x1 and 1x1 tiles and two
  text tokens before its first image token, which attend to no image; sample 1 has one 2x2 image
  and a padding image slot. The inputs (pixel_values, aspect_ratio_ids, aspect_ratio_mask,
  input_ids, labels, and cross_attention_mask as Hugging Face's processor builds it: an image
  token opens an interval that the next image token closes, the last one's runs to the end),
  "vision_output" (the vision model's last_hidden_state, before the projector), "logits", "loss"
  (Hugging Face's: mean cross entropy of the labels shifted by one, -100 ignored) and, after
  loss.backward(), "grad.<key>" for every parameter. Every parameter gets a gradient; it is zero
  in the rows of the text embedding and of the three aspect ratio embeddings that no input selects
  (the text embedding's padding row 0 among them, which padding_idx keeps from any gradient; the
  aspect ratio id 0 of the padding image, whose vision tokens every text row masks out).
- text_only.safetensors: input_ids and the logits of the same model without images, which skips
  the cross-attention layers whole.

After construction every parameter is redrawn from a seeded normal (norm weights near 1, gates
uniform in [-1.5, 1.5], so that tanh(gate) and 1 - tanh(gate) differ), so that a parameter read
into the wrong place changes the outputs. The text embedding's padding row stays zero, as Hugging
Face's initialisation leaves it.

Two changes to the model code, both checked here:
- Meta's reference implementation (llama-models), which trained the published checkpoints, and
  torchtune zero both the cross-attention output and the MLP output of a text token that attends
  to no image (a row of zeros in cross_attention_mask). Hugging Face's
  MllamaCrossAttentionDecoderLayer zeroes only the MLP output (transformers issue #39379), so
  such rows add a uniform average over every vision token, padding included. The layer here zeroes
  both. Sample 0's logits change (rows 0-1 directly, the later ones through self-attention);
  sample 1, whose rows all see an image, stays bit for bit the same.
- Hugging Face computes softmax, RMSNorm, the RoPE tables and the loss's logits in float32 whatever
  the model's dtype. In float64 that limits everything to float32 accuracy and casts the mask
  value finfo(float64).min to -inf in the softmax, so a padding image (every tile masked) gets NaN
  vision rows and, through the cross-attention, its whole sample NaN logits. Here every float32
  that transformers asks for becomes float64, as in tests/golden/make_family_goldens.py (the RoPE
  frequencies keep their float32 values; the angles, cosines and sines are computed in float64).
  Sample 0, which has no padding image, agrees with the unchanged code to float32 accuracy.
"""
import argparse
import contextlib
import math
import pathlib
import sys

import torch
from safetensors.torch import save_file
from torch.overrides import TorchFunctionMode
from transformers import MllamaConfig, MllamaForConditionalGeneration
from transformers.models.mllama import modeling_mllama as mm
from transformers.models.mllama.configuration_mllama import MllamaTextConfig, MllamaVisionConfig
from transformers.models.mllama.processing_mllama import (
    convert_sparse_cross_attention_mask_to_dense,
    get_cross_attention_token_mask,
)

IMAGE_TOKEN = 300
SEQ_LEN = 12
MAX_TILES = 4
# Each sample's images as (tile rows, tile columns), the processor's (num_tiles_height, num_tiles_width).
IMAGES = [[(2, 1), (1, 1)], [(2, 2)]]
DEFAULT_ASPECT_RATIOS = [[1, 1], [1, 2], [1, 3], [1, 4], [2, 1], [2, 2], [3, 1], [4, 1]]
# Module names (transformers 4.57) to the published checkpoint's keys.
KEY_PREFIXES = [
    ("model.vision_model.", "vision_model."),
    ("model.multi_modal_projector.", "multi_modal_projector."),
    ("model.language_model.", "language_model.model."),
    ("lm_head.", "language_model.lm_head."),
]


def make_config():
    vision = MllamaVisionConfig(
        hidden_size=32, num_attention_heads=4, num_hidden_layers=3, num_global_layers=2,
        intermediate_size=64, image_size=28, patch_size=14, max_num_tiles=MAX_TILES,
        intermediate_layers_indices=[0, 2], vision_output_dim=96, norm_eps=1e-5, num_channels=3,
    )
    text = MllamaTextConfig(
        vocab_size=300, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
        num_hidden_layers=5, cross_attention_layers=[1, 3], intermediate_size=128,
        rope_theta=500000.0,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 8},
        max_position_embeddings=64, rms_norm_eps=1e-5, tie_word_embeddings=False, pad_token_id=0,
    )
    return MllamaConfig(vision_config=vision.to_dict(), text_config=text.to_dict(), image_token_index=IMAGE_TOKEN)


class Float64Mode(TorchFunctionMode):
    """Turns every float32 that transformers asks for (softmax, RMSNorm, the RoPE tables, the
    loss's logits.float()) into float64."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.float:
            return args[0].double()
        args = tuple(torch.float64 if a is torch.float32 else a for a in args)
        kwargs = {k: torch.float64 if v is torch.float32 else v for k, v in (kwargs or {}).items()}
        return func(*args, **kwargs)


def cross_attention_layer_meta(self, hidden_states, cross_attention_states, cross_attention_mask, attention_mask,
                               full_text_row_masked_out_mask, past_key_values=None, cache_position=None, **kwargs):
    residual = hidden_states
    hidden_states = self.input_layernorm(hidden_states)
    hidden_states, _ = self.cross_attn(
        hidden_states=hidden_states, attention_mask=cross_attention_mask,
        cross_attention_states=cross_attention_states, past_key_values=past_key_values,
        cache_position=cache_position,
    )
    # The one change: rows that attend to no image get no attention output either (see the docstring).
    if full_text_row_masked_out_mask is not None:
        hidden_states = full_text_row_masked_out_mask[:, 0] * hidden_states
    hidden_states = residual + self.cross_attn_attn_gate.tanh() * hidden_states
    residual = hidden_states
    hidden_states = self.mlp(self.post_attention_layernorm(hidden_states))
    if full_text_row_masked_out_mask is not None:
        hidden_states = full_text_row_masked_out_mask[:, 0] * hidden_states
    return residual + self.cross_attn_mlp_gate.tanh() * hidden_states


def run(model, inputs, meta_cross_attention=True, float64=True):
    """One forward pass, with or without each change to the model code (see the docstring)."""
    original = mm.MllamaCrossAttentionDecoderLayer.forward
    if meta_cross_attention:
        mm.MllamaCrossAttentionDecoderLayer.forward = cross_attention_layer_meta
    try:
        with Float64Mode() if float64 else contextlib.nullcontext():
            return model(**inputs, use_cache=False)
    finally:
        mm.MllamaCrossAttentionDecoderLayer.forward = original


def redraw_parameters(model, matrix_std=0.2):
    """Every parameter from a seeded normal drawn in float64 and rounded to the parameter's dtype:
    matrices and embeddings matrix_std x N, norm weights 1 + 0.1 N, biases 0.1 N, scalar gates
    uniform in [-1.5, 1.5] away from 0 and from tanh = 1/2, so that a parameter mapped to the wrong
    place changes the output; the text embedding's padding row stays zero, as Hugging Face has it."""
    gen = torch.Generator().manual_seed(1)
    norm_weights = {id(m.weight) for m in model.modules() if isinstance(m, (torch.nn.LayerNorm, mm.MllamaTextRMSNorm))}
    with torch.no_grad():
        for name, p in model.named_parameters():
            normal = torch.randn(p.shape, generator=gen, dtype=torch.float64)
            if p.numel() == 1:
                p.copy_(torch.empty((), dtype=torch.float64).uniform_(-1.5, 1.5, generator=gen))
                if abs(p.item()) < 0.05 or abs(math.tanh(p.item()) - 0.5) < 0.05:
                    raise ValueError(f"gate {name} = {p.item()} is too close to 0 or to tanh = 1/2")
            elif id(p) in norm_weights:
                p.copy_(1 + 0.1 * normal)
            elif name.endswith(".bias"):
                p.copy_(0.1 * normal)
            else:
                p.copy_(matrix_std * normal)
        embed = model.model.language_model.embed_tokens
        embed.weight[embed.padding_idx].zero_()


def published_keys(model):
    names = list(model.state_dict().keys())
    params = dict(model.named_parameters())
    if set(names) != set(params) or len({p.data_ptr() for p in params.values()}) != len(params):
        raise ValueError("the state dict is not exactly the parameters, each stored once")
    mapping = {}
    for name in names:
        hits = [new + name[len(old):] for old, new in KEY_PREFIXES if name.startswith(old)]
        if len(hits) != 1:
            raise ValueError(f"{name}: {len(hits)} published prefixes match")
        mapping[name] = hits[0]
    if len(set(mapping.values())) != len(mapping):
        raise ValueError("two parameters map to one published key")
    return mapping


def make_inputs(config):
    supported = config.vision_config.supported_aspect_ratios
    if supported != DEFAULT_ASPECT_RATIOS:
        raise ValueError(f"supported_aspect_ratios is {supported}")
    gen = torch.Generator().manual_seed(2)
    pixel_values = torch.zeros(2, 2, MAX_TILES, 3, 28, 28, dtype=torch.float64)
    aspect_ratio_ids = torch.zeros(2, 2, dtype=torch.int64)
    aspect_ratio_mask = torch.zeros(2, 2, MAX_TILES, dtype=torch.int64)
    for b, images in enumerate(IMAGES):
        for i, (rows, cols) in enumerate(images):
            pixel_values[b, i, : rows * cols] = torch.randn(rows * cols, 3, 28, 28, generator=gen, dtype=torch.float64)
            aspect_ratio_ids[b, i] = supported.index([rows, cols]) + 1  # the processor's ids: 0 is padding
            aspect_ratio_mask[b, i, : rows * cols] = 1

    def words(n):
        return torch.randint(1, IMAGE_TOKEN, (n,), generator=gen).tolist()

    input_ids = torch.tensor([
        words(2) + [IMAGE_TOKEN] + words(3) + [IMAGE_TOKEN] + words(4) + [0],
        [IMAGE_TOKEN] + words(9) + [0, 0],
    ])
    labels = input_ids.masked_fill((input_ids == IMAGE_TOKEN) | (input_ids == 0), -100)
    intervals = [get_cross_attention_token_mask(ids, IMAGE_TOKEN) for ids in input_ids.tolist()]
    tiles = [[rows * cols for rows, cols in images] for images in IMAGES]
    cross_attention_mask = torch.from_numpy(
        convert_sparse_cross_attention_mask_to_dense(intervals, tiles, MAX_TILES, SEQ_LEN))
    return {"input_ids": input_ids, "pixel_values": pixel_values, "aspect_ratio_ids": aspect_ratio_ids,
            "aspect_ratio_mask": aspect_ratio_mask, "cross_attention_mask": cross_attention_mask}, labels


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=pathlib.Path)
    out = parser.parse_args().out_dir / "mllama_tiny"
    torch.set_num_threads(1)

    config = make_config()
    vc = config.vision_config
    if vc.vision_output_dim != vc.hidden_size * (1 + len(vc.intermediate_layers_indices)):
        raise ValueError("vision_output_dim must be hidden_size x (1 + the number of intermediate layers)")
    config.dtype = torch.float64
    torch.manual_seed(0)
    # Built outside Float64Mode: the RoPE frequencies are float32 values in the published model
    # (Hugging Face's and Meta's code compute them in float32), whatever the activations' dtype.
    model = MllamaForConditionalGeneration._from_config(config, attn_implementation="eager").double().eval()
    redraw_parameters(model)
    keys = published_keys(model)
    inputs, labels = make_inputs(config)

    with torch.no_grad():
        hf = run(model, inputs, meta_cross_attention=False).logits
        stock = run(model, inputs, meta_cross_attention=False, float64=False).logits
    captured = {}
    hook = model.model.vision_model.register_forward_hook(lambda m, a, o: captured.update(out=o.last_hidden_state))
    result = run(model, {**inputs, "labels": labels})
    hook.remove()
    logits, loss = result.logits, result.loss
    moved = (logits[0, :2] - hf[0, :2]).abs().max().item()
    if moved < 1e-3 or not torch.equal(logits[1], hf[1]):
        raise ValueError("zeroing the cross-attention output must change sample 0's rows 0-1 and nothing of sample 1")
    stock_error = ((stock[0] - hf[0]).abs().max() / hf[0].abs().max()).item()
    if not stock_error < 1e-5:
        raise ValueError(f"float64 instead of float32 moves sample 0's logits by {stock_error:.2e} (relative)")
    if loss.dtype != torch.float64:
        raise ValueError(f"the loss is {loss.dtype}")
    loss.backward()

    case = {**inputs, "labels": labels, "vision_output": captured["out"], "logits": logits, "loss": loss}
    weights = {}
    for name, p in model.named_parameters():
        if p.grad is None:
            raise ValueError(f"{name} has no gradient")
        weights[keys[name]] = p
        case[f"grad.{keys[name]}"] = p.grad
    with torch.no_grad():
        text_only = {"input_ids": inputs["input_ids"], "logits": run(model, {"input_ids": inputs["input_ids"]}).logits}

    out.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(out)
    for name, tensors in (("model", weights), ("case", case), ("text_only", text_only)):
        save_file({k: v.detach().contiguous() for k, v in tensors.items()}, str(out / f"{name}.safetensors"),
                  metadata={"format": "pt"})

    # The published layout is the one transformers reads.
    reloaded, info = MllamaForConditionalGeneration.from_pretrained(out, dtype="auto", attn_implementation="eager",
                                                                   output_loading_info=True)
    state = model.state_dict()
    if any(info.values()) or any(not torch.equal(v, state[k]) for k, v in reloaded.state_dict().items()):
        raise ValueError(f"from_pretrained does not read the weights back: {info}")
    print(f"{out}: {len(weights)} parameters, loss {loss.item():.6f}; zeroing the cross-attention output of "
          f"text rows without an image moves their logits by up to {moved:.3f}")


if __name__ == "__main__":
    try:
        main()
    except Exception as error:
        sys.exit(f"make_mllama_references: {error}")
