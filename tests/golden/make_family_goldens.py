#!/usr/bin/env python3
"""Golden training trajectories for the Qwen 3, Qwen 3 MoE, Gemma, Gemma 2, Mistral, Mixtral, Phi-3
and Llama 4 (text and multimodal checkpoint, text-only training) families; one Qwen 3 MoE case
(qwen3_moe_aux) trains with the router load-balancing loss.

Writes, into --out DIR, the same layout and semantics as the shared golden set
(FT_FIXTURES/golden, described in FT_FIXTURES/README.md):

    DIR/cases.json
    DIR/fixtures/<fixture>/{config.json, model.safetensors, data.jsonl}
    DIR/<case>.{expected.jsonl, initial.json, order.jsonl, final_weights.json}
    DIR/reference_check.json   (float64 transformers-vs-torchtune comparison per case, and the
                                float32 golden against the same run in float64)
    DIR/.complete              (written last; absent means the generation is partial)

The expected numbers come from an independent implementation: torchtune's own model
code (its component builders and its Hugging Face weight conversion) where torchtune
agrees with Hugging Face transformers' modeling code to float64 precision, and
transformers' modeling code (eager attention) where it does not (see
tests/golden/README.md). Nothing here uses fthost. Every case's float32 run is checked against
the same implementation's run in float64 and refused when float32 rounding moves loss or
grad_norm by more than 2e-5 or a final sum of squares by more than 1e-5 (a tenth of the tests'
tolerances).

    --self-check   first re-derives the shared goldens (FT_FIXTURES, default
                   ../shared/fixtures from the repository root) with this script's training loop, through
                   torchtune's models and through transformers' models, and fails
                   unless both reproduce them within the README's tolerances.

Usage:
    OMP_NUM_THREADS=1 .venv/bin/python tests/golden/make_family_goldens.py --out DIR
    OMP_NUM_THREADS=1 .venv/bin/python tests/golden/make_family_goldens.py --self-check
"""

import argparse
import json
import math
import os
import sys
import time
import zlib

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# The versions the goldens were made with (scripts/reference-requirements.txt).
PINNED = {"torch": "2.13.0", "transformers": "4.57.6", "torchtune": "0.6.1", "torchao": "0.11.0"}
REQS_HINT = ".venv/bin/pip install -r scripts/reference-requirements.txt"


def die(msg):
    sys.stderr.write("make_family_goldens.py: error: " + msg + "\n")
    sys.exit(2)


def import_references(allow_other_versions):
    missing = []
    mods = {}
    for name in ("numpy", "torch", "safetensors", "torchao", "torchtune", "transformers"):
        try:
            mods[name] = __import__(name)
        except Exception as e:  # ImportError, or a broken install failing on import
            missing.append("%s (%s: %s)" % (name, type(e).__name__, e))
    if missing:
        die("reference package(s) missing or not importable: " + "; ".join(missing)
            + ". Install the pinned references with: " + REQS_HINT)
    bad = []
    for name, want in PINNED.items():
        have = getattr(mods[name], "__version__", "?")
        if have.split("+")[0] != want:
            bad.append("%s %s (pinned %s)" % (name, have, want))
    if bad:
        msg = "reference versions differ from the pins: " + ", ".join(bad)
        if not allow_other_versions:
            die(msg + ". Install them with: " + REQS_HINT
                + " (or pass --allow-other-versions to experiment)")
        sys.stderr.write("make_family_goldens.py: warning: " + msg + "\n")
    return mods


# ----------------------------------------------------------------------------
# Deterministic pseudo-random numbers (SplitMix64), independent of the torch,
# numpy and Python versions, so the fixtures are the same bytes everywhere.
# ----------------------------------------------------------------------------
_M64 = (1 << 64) - 1


def _mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


class Rng:
    def __init__(self, seed):
        self.state = seed & _M64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & _M64
        return _mix64(self.state)

    def below(self, n):
        return self.next() % n


def uniform_array(np, seed, n):
    """n uniforms in [0, 1) from SplitMix64 over counters seed+1..seed+n (vectorised)."""
    with np.errstate(over="ignore"):
        z = (np.uint64(seed & _M64) + (np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def name_seed(*parts):
    return zlib.crc32("/".join(parts).encode()) * 0x100000001B3 & _M64


# ----------------------------------------------------------------------------
# Fixtures and cases
# ----------------------------------------------------------------------------
# Llama 4 text model: 4 layers; MoE on layers 1 and 3 (interleave_moe_layer_step 2), dense
# (intermediate_size_mlp) on 0 and 2; no_rope_layers [1, 1, 0, 0] (1 = RoPE): layers 0 and 1 use
# RoPE, chunked attention and the q/k L2 norm, layers 2 and 3 are NoPE, full attention and
# temperature-tuned; so each of dense/MoE meets each of RoPE/NoPE once.
LLAMA4_TEXT_KW = dict(
    vocab_size=256, hidden_size=64, intermediate_size=32, intermediate_size_mlp=128,
    num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
    hidden_act="silu", max_position_embeddings=256, rms_norm_eps=1e-5, rope_theta=500000.0,
    rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                  "high_freq_factor": 4.0, "original_max_position_embeddings": 16},
    attention_dropout=0.0, num_local_experts=4, num_experts_per_tok=1, interleave_moe_layer_step=2,
    no_rope_layers=[1, 1, 0, 0], attention_chunk_size=8, use_qk_norm=True,
    attn_temperature_tuning=True, floor_scale=2, attn_scale=1.0, output_router_logits=False,
    router_aux_loss_coef=0.001, router_jitter_noise=0.0, tie_word_embeddings=False,
    bos_token_id=1, eos_token_id=2)

QWEN3_MOE_KW = dict(
    vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
    num_attention_heads=4, num_key_value_heads=2, head_dim=24, hidden_act="silu",
    max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=1000000.0,
    rope_scaling=None, attention_bias=False, attention_dropout=0.0,
    use_sliding_window=False, sliding_window=None, decoder_sparse_step=1,
    moe_intermediate_size=32, num_experts=4, num_experts_per_tok=2, norm_topk_prob=True,
    output_router_logits=False, router_aux_loss_coef=0.001, mlp_only_layers=[1],
    tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)

# Shapes: vocab 256, hidden 64, 4 query heads, intermediate 128. head_dim differs
# from hidden/heads (= 16) wherever the family has an explicit head_dim.
# The mixture-of-experts fixtures keep vocab, hidden and heads; their expert sizes are smaller.
FIXTURES = {
    "qwen3_tied": dict(
        cls="Qwen3Config", arch="Qwen3ForCausalLM", norm_plus_one=False, embed_scale=0.25,
        kw=dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=24, hidden_act="silu",
                max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=1000000.0,
                rope_scaling=None, attention_bias=False, attention_dropout=0.0,
                use_sliding_window=False, sliding_window=None, max_window_layers=2,
                tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)),
    "qwen3_untied": dict(
        cls="Qwen3Config", arch="Qwen3ForCausalLM", norm_plus_one=False,
        kw=dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
                num_attention_heads=4, num_key_value_heads=2, head_dim=32, hidden_act="silu",
                max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=1000000.0,
                rope_scaling=None, attention_bias=False, attention_dropout=0.0,
                use_sliding_window=False, sliding_window=None, max_window_layers=3,
                tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)),
    "gemma_tied": dict(
        cls="GemmaConfig", arch="GemmaForCausalLM", norm_plus_one=True, embed_scale=0.25,
        kw=dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=1, head_dim=24,
                hidden_act="gelu_pytorch_tanh", hidden_activation="gelu_pytorch_tanh",
                max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=10000.0,
                attention_bias=False, attention_dropout=0.0, tie_word_embeddings=True,
                pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    "gemma2": dict(
        cls="Gemma2Config", arch="Gemma2ForCausalLM", norm_plus_one=True, embed_scale=0.25,
        kw=dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
                num_attention_heads=4, num_key_value_heads=2, head_dim=24,
                hidden_activation="gelu_pytorch_tanh", max_position_embeddings=256,
                rms_norm_eps=1e-6, rope_theta=10000.0, attention_bias=False,
                attention_dropout=0.0, query_pre_attn_scalar=32,
                attn_logit_softcapping=1.5, final_logit_softcapping=3.5, sliding_window=8,
                layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                tie_word_embeddings=True, pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    "mistral_sliding": dict(
        cls="MistralConfig", arch="MistralForCausalLM", norm_plus_one=False,
        kw=dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=16, hidden_act="silu",
                max_position_embeddings=256, rms_norm_eps=1e-5, rope_theta=10000.0,
                sliding_window=8, attention_dropout=0.0, tie_word_embeddings=False,
                bos_token_id=1, eos_token_id=2)),
    "phi3_untied": dict(
        cls="Phi3Config", arch="Phi3ForCausalLM", norm_plus_one=False,
        kw=dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, hidden_act="silu",
                max_position_embeddings=256, original_max_position_embeddings=256,
                rms_norm_eps=1e-5, rope_theta=10000.0, rope_scaling=None,
                partial_rotary_factor=1.0, sliding_window=None, resid_pdrop=0.0,
                embd_pdrop=0.0, attention_dropout=0.0, tie_word_embeddings=False,
                pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    # Mixture-of-experts families. Expert tensors: see tests/golden/README.md.
    "qwen3_moe": dict(
        cls="Qwen3MoeConfig", arch="Qwen3MoeForCausalLM", norm_plus_one=False, moe=True,
        weight_seed="qwen3_moe#111", kw=QWEN3_MOE_KW),
    # qwen3_moe with the router load-balancing loss on: the same checkpoint and data (checked),
    # config.json differs only in output_router_logits and router_aux_loss_coef.
    "qwen3_moe_aux": dict(
        cls="Qwen3MoeConfig", arch="Qwen3MoeForCausalLM", norm_plus_one=False, moe=True,
        weight_seed="qwen3_moe#111", same_as="qwen3_moe", prefix="",
        kw=dict(QWEN3_MOE_KW, output_router_logits=True, router_aux_loss_coef=0.2)),
    "qwen3_moe_step2_tied": dict(
        cls="Qwen3MoeConfig", arch="Qwen3MoeForCausalLM", norm_plus_one=False, embed_scale=0.25, moe=True,
        weight_seed="qwen3_moe_step2_tied#52",
        kw=dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=16, hidden_act="silu",
                max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=1000000.0,
                rope_scaling=None, attention_bias=False, attention_dropout=0.0,
                use_sliding_window=False, sliding_window=None, decoder_sparse_step=2,
                moe_intermediate_size=32, num_experts=4, num_experts_per_tok=2, norm_topk_prob=False,
                output_router_logits=False, router_aux_loss_coef=0.001, mlp_only_layers=[],
                tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)),
    "mixtral": dict(
        cls="MixtralConfig", arch="MixtralForCausalLM", norm_plus_one=False, moe=True,
        weight_seed="mixtral#33",
        kw=dict(vocab_size=256, hidden_size=64, intermediate_size=32, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=16, hidden_act="silu",
                max_position_embeddings=256, rms_norm_eps=1e-5, rope_theta=1000000.0,
                sliding_window=None, attention_dropout=0.0, num_local_experts=4,
                num_experts_per_tok=2, output_router_logits=False, router_aux_loss_coef=0.001,
                router_jitter_noise=0.0, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)),
    "llama4_text": dict(
        cls="Llama4TextConfig", arch="Llama4ForCausalLM", norm_plus_one=False, moe=True,
        weight_seed="llama4_text#17", kw=LLAMA4_TEXT_KW,
        # q and k projections twice the default scale on the RoPE layers 0 and 1, so that their q/k
        # L2 norm matters (with it the scale cancels). Not on the NoPE layers 2 and 3: there nothing
        # normalizes q and k, and twice the scale (4x the attention logits, times the temperature
        # tuning's up to 3.94) made their attention so sharp (logits up to 81) that float32 rounding
        # reached 1.4e-4 of the grad_norm (see tests/golden/README.md, Conditioning).
        weight_scale={"model.layers.0.self_attn.q_proj": 2.0, "model.layers.0.self_attn.k_proj": 2.0,
                      "model.layers.1.self_attn.q_proj": 2.0, "model.layers.1.self_attn.k_proj": 2.0}),
    # Llama4ForConditionalGeneration: the llama4_text model (same weights under language_model.,
    # same data) plus the smallest vision tower and projector transformers builds and runs.
    "llama4_conditional": dict(
        cls="Llama4Config", arch="Llama4ForConditionalGeneration", norm_plus_one=False, moe=True,
        same_as="llama4_text", prefix="language_model.",
        kw=dict(text_config=LLAMA4_TEXT_KW,
                vision_config=dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=64, num_channels=3, image_size=8, patch_size=4,
                                   pixel_shuffle_ratio=0.5, projector_input_dim=32,
                                   projector_output_dim=32, vision_output_dim=32, norm_eps=1e-5,
                                   rope_theta=10000, hidden_act="gelu", attention_dropout=0.0,
                                   projector_dropout=0.0, multi_modal_projector_bias=False),
                boi_token_index=253, eoi_token_index=254, image_token_index=255,
                tie_word_embeddings=False)),
}

NUM_SAMPLES = 44        # 11 optimizer steps' worth at batch 2 x grad_accum 2; 10 are run
MIN_LEN, MAX_LEN = 8, 40

# Hyperparameters as the shared cases.json spells them (strings; shuffle a bool).
CASES = [
    ("qwen3_tied_ga2_clip", "qwen3_tied",
     {"lr": "1e-3", "label_shift": "none", "steps": "10", "batch_size": "2", "grad_accum": "2",
      "warmup": "2", "clip_grad_norm": "5.0"}),
    ("qwen3_untied", "qwen3_untied",
     {"lr": "1e-3", "label_shift": "none", "steps": "10", "batch_size": "2", "grad_accum": "1",
      "scheduler": "none", "shuffle": True}),
    ("gemma_tied_ga2_clip", "gemma_tied",
     {"lr": "1e-3", "label_shift": "none", "steps": "10", "batch_size": "2", "grad_accum": "2",
      "warmup": "2", "clip_grad_norm": "3.3", "shuffle": True}),
    ("gemma2_ga2_clip", "gemma2",
     {"lr": "1e-3", "label_shift": "none", "steps": "10", "batch_size": "2", "grad_accum": "2",
      "warmup": "2", "clip_grad_norm": "3.7"}),
    ("mistral_sliding_ga2_clip", "mistral_sliding",
     {"lr": "1e-3", "label_shift": "none", "steps": "10", "batch_size": "2", "grad_accum": "2",
      "warmup": "1", "clip_grad_norm": "3.6", "weight_decay": "0.1", "shuffle": True}),
    ("phi3_untied_ga2_clip", "phi3_untied",
     {"lr": "1e-3", "label_shift": "none", "steps": "10", "batch_size": "2", "grad_accum": "2",
      "warmup": "2", "clip_grad_norm": "3.4"}),
    ("qwen3_moe_ga2_clip", "qwen3_moe",
     {"lr": "1e-3", "label_shift": "none", "steps": "10", "batch_size": "2", "grad_accum": "2",
      "warmup": "2", "clip_grad_norm": "3.5"}),
    # The router load-balancing loss (router_aux_loss_coef 0.2) on qwen3_moe's checkpoint and data.
    ("qwen3_moe_aux", "qwen3_moe_aux",
     {"lr": "1e-3", "label_shift": "none", "steps": "10", "batch_size": "2", "grad_accum": "1",
      "warmup": "1", "clip_grad_norm": "5.6", "shuffle": True}),
    ("qwen3_moe_step2_tied", "qwen3_moe_step2_tied",
     {"lr": "1e-3", "label_shift": "none", "steps": "10", "batch_size": "2", "grad_accum": "1",
      "scheduler": "none", "shuffle": True}),
    ("mixtral_ga2_clip", "mixtral",
     {"lr": "1e-3", "label_shift": "none", "steps": "10", "batch_size": "2", "grad_accum": "2",
      "scheduler": "none", "clip_grad_norm": "3.5", "shuffle": True}),
    ("llama4_text_ga2_clip", "llama4_text",
     {"lr": "1e-3", "label_shift": "none", "steps": "10", "batch_size": "2", "grad_accum": "2",
      "warmup": "1", "clip_grad_norm": "4.7"}),
    # Text only (input_ids, no pixel_values) through Llama4ForConditionalGeneration.
    ("llama4_conditional_text", "llama4_conditional",
     {"lr": "1e-3", "label_shift": "none", "steps": "10", "batch_size": "2", "grad_accum": "1",
      "warmup": "2", "clip_grad_norm": "8.5", "weight_decay": "0.1", "shuffle": True}),
]

AGREE_REL = 1e-9  # torchtune "agrees" when max|logit diff| / max|logit| (float64) is below this


def make_samples(fixture, vocab):
    """Pre-tokenized samples: arithmetic runs with noise, lengths MIN_LEN..MAX_LEN.

    Every third sample is fully unmasked (labels == tokens); the others mask a
    prompt of 1..len-3 tokens with -100. Tokens never use the pad id 0."""
    rng = Rng(name_seed("data", fixture))
    out = []
    for i in range(NUM_SAMPLES):
        n = MIN_LEN + rng.below(MAX_LEN - MIN_LEN + 1)
        start, step = rng.below(vocab - 1), 1 + rng.below(9)
        toks = []
        for j in range(n):
            if rng.below(8) == 0:
                toks.append(1 + rng.below(vocab - 1))
            else:
                toks.append(1 + (start + j * step) % (vocab - 1))
        labels = list(toks)
        if i % 3 != 0:
            p = 1 + rng.below(n - 3)
            labels[:p] = [-100] * p
        out.append({"tokens": toks, "labels": labels})
    return out


# ----------------------------------------------------------------------------
# float64 comparison mode: every float32 the libraries ask for becomes float64
# ----------------------------------------------------------------------------
def make_fp64_mode(torch):
    from torch.overrides import TorchFunctionMode

    f32, f64 = torch.float32, torch.float64

    class Fp64Mode(TorchFunctionMode):
        """Runs transformers' and torchtune's float32 up-casts (RMSNorm, softmax, RoPE
        tables, logits .float()) in float64, so the two implementations can be compared
        at float64 precision."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is torch.Tensor.float:
                return args[0].double()
            args = tuple(f64 if a is f32 else a for a in args)
            kwargs = {k: (f64 if v is f32 else v) for k, v in kwargs.items()}
            return func(*args, **kwargs)

    return Fp64Mode


class Ctx:
    """Holds the imported modules and small helpers."""

    def __init__(self, mods):
        self.np = mods["numpy"]
        self.torch = mods["torch"]
        self.transformers = mods["transformers"]
        self.torchtune = mods["torchtune"]
        from safetensors.torch import load_file, save_file
        self.load_file, self.save_file = load_file, save_file
        self.Fp64Mode = make_fp64_mode(self.torch)


# ----------------------------------------------------------------------------
# Models: transformers (published definition) and torchtune (component builders)
# ----------------------------------------------------------------------------
def hf_class(ctx, cfg):
    """The transformers class for cfg: AutoModelForCausalLM, except for the multimodal Llama 4
    checkpoint (model_type llama4), which is Llama4ForConditionalGeneration (AutoModelForCausalLM
    would pick Llama4ForCausalLM for it)."""
    tr = ctx.transformers
    if cfg.model_type == "llama4":
        return tr.Llama4ForConditionalGeneration
    return tr.AutoModelForCausalLM


def hf_build(ctx, cfg, **kw):
    cls = hf_class(ctx, cfg)
    if cls is ctx.transformers.AutoModelForCausalLM:
        return cls.from_config(cfg, **kw)
    return cls._from_config(cfg, **kw)


def check_eager(ctx, model):
    """Every (sub-)config of the model must select eager attention (composite models too)."""
    for m in model.modules():
        c = getattr(m, "config", None)
        if isinstance(c, ctx.transformers.PretrainedConfig) and c._attn_implementation != "eager":
            die("%s: %s uses %s attention, not eager" % (model.config.model_type, type(m).__name__,
                                                         c._attn_implementation))


def hf_from_dir(ctx, d):
    torch, tr = ctx.torch, ctx.transformers
    cls = hf_class(ctx, tr.AutoConfig.from_pretrained(d))
    model, info = cls.from_pretrained(
        d, attn_implementation="eager", dtype=torch.float32, output_loading_info=True)
    problems = {k: v for k, v in info.items() if v}
    if problems:
        die("transformers loading %s: %s" % (d, problems))
    check_eager(ctx, model)
    return model


def hf_from_config(ctx, cfg, sd, dtype):
    """Builds the transformers model from a config object and a state dict (any dtype)."""
    torch, tr = ctx.torch, ctx.transformers
    prev = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        model = hf_build(ctx, cfg, attn_implementation="eager", dtype=dtype)
    finally:
        torch.set_default_dtype(prev)
    res = model.load_state_dict({k: v.to(dtype) for k, v in sd.items()}, strict=False)
    missing = [k for k in res.missing_keys if not (k == "lm_head.weight" and cfg.tie_word_embeddings)]
    if missing or res.unexpected_keys:
        die("state dict mismatch for %s: missing %s unexpected %s" % (cfg.model_type, missing, res.unexpected_keys))
    if cfg.tie_word_embeddings:
        model.tie_weights()
        assert model.lm_head.weight is model.model.embed_tokens.weight
    check_eager(ctx, model)
    return model


def tt_supported(cfg):
    return cfg.model_type in ("llama", "qwen2", "gemma", "gemma2", "mistral", "phi3")


# Why torchtune 0.6.1 cannot serve as the reference, for the MoE families it lacks (the others
# say "torchtune 0.6.1 has no <model_type> model").
TT_ABSENT = {
    "qwen3_moe": "torchtune 0.6.1 has no Qwen 3 MoE model",
    "mixtral": "torchtune 0.6.1 has no Mixtral model (and no mixture-of-experts module)",
    "llama4_text": ("torchtune 0.6.1 has no Llama 4 model: torchtune.models.llama4 and torchtune.modules.moe "
                    "arrived on torchtune's main branch on 2025-04-10 (pytorch/torchtune#2570), after the "
                    "v0.6.1 tag (2025-04-07), and no torchtune release contains them"),
}
TT_ABSENT["llama4"] = TT_ABSENT["llama4_text"]


def tt_builder_name(cfg):
    if cfg.model_type == "llama":
        return "llama3_2" if cfg.rope_scaling else "llama3"
    return cfg.model_type


def tt_build(ctx, cfg, hf_sd, dtype, ff_norm_fix=False):
    """torchtune 0.6.1's model for cfg, loaded through torchtune's own HF conversion.

    ff_norm_fix=True (Gemma 2 only, for diagnosis) puts the pre/post feed-forward norm
    weights where transformers applies them (gemma2_hf_to_tune swaps them)."""
    torch = ctx.torch
    c = cfg
    common = dict(vocab_size=c.vocab_size, num_layers=c.num_hidden_layers,
                  num_heads=c.num_attention_heads, num_kv_heads=c.num_key_value_heads,
                  embed_dim=c.hidden_size, max_seq_len=c.max_position_embeddings)
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    conv = dict(num_heads=c.num_attention_heads, num_kv_heads=c.num_key_value_heads, dim=c.hidden_size)
    mt = c.model_type
    prev = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        if mt == "llama":
            from torchtune.models.convert_weights import hf_to_tune
            if c.rope_scaling:
                from torchtune.models.llama3_2._component_builders import llama3_2
                rs = c.rope_scaling
                if (rs.get("rope_type") != "llama3" or rs.get("low_freq_factor") != 1.0
                        or rs.get("high_freq_factor") != 4.0
                        or rs.get("original_max_position_embeddings") != 8192):
                    die("llama rope_scaling not expressible with torchtune's llama3_2: %s" % rs)
                model = llama3_2(**common, rope_base=c.rope_theta, intermediate_dim=c.intermediate_size,
                                 norm_eps=c.rms_norm_eps, scale_factor=int(rs["factor"]),
                                 tie_word_embeddings=c.tie_word_embeddings)
            else:
                from torchtune.models.llama3._component_builders import llama3
                if c.tie_word_embeddings:
                    die("torchtune's llama3 builder is untied")
                model = llama3(**common, rope_base=c.rope_theta, intermediate_dim=c.intermediate_size,
                               norm_eps=c.rms_norm_eps)
            tsd = hf_to_tune(hf_sd, **conv, head_dim=head_dim)
        elif mt == "qwen2":
            from torchtune.models.qwen2._component_builders import qwen2
            from torchtune.models.qwen2._convert_weights import qwen2_hf_to_tune
            model = qwen2(**common, intermediate_dim=c.intermediate_size, norm_eps=c.rms_norm_eps,
                          rope_base=c.rope_theta, tie_word_embeddings=c.tie_word_embeddings)
            tsd = qwen2_hf_to_tune(hf_sd, **conv, head_dim=head_dim, tie_word_embeddings=c.tie_word_embeddings)
        elif mt == "gemma":
            from torchtune.models.gemma._component_builders import gemma
            from torchtune.models.convert_weights import hf_to_tune
            model = gemma(**common, head_dim=head_dim, intermediate_dim=c.intermediate_size,
                          norm_eps=c.rms_norm_eps, rope_base=c.rope_theta)
            tsd = hf_to_tune(hf_sd, **conv, head_dim=head_dim)
        elif mt == "gemma2":
            from torchtune.models.gemma2._component_builders import gemma2
            from torchtune.models.gemma2._convert_weights import gemma2_hf_to_tune
            expect = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(c.num_hidden_layers)]
            if list(c.layer_types) != expect:
                die("torchtune's gemma2 puts the sliding window on even layers only")
            model = gemma2(**common, head_dim=head_dim, intermediate_dim=c.intermediate_size,
                           norm_eps=c.rms_norm_eps, rope_base=c.rope_theta,
                           hidden_capping_value=c.attn_logit_softcapping,
                           final_capping_value=c.final_logit_softcapping,
                           sliding_window_size=c.sliding_window,
                           query_pre_attn_scalar=c.query_pre_attn_scalar)
            tsd = gemma2_hf_to_tune(hf_sd, **conv, head_dim=head_dim)
            if ff_norm_fix:
                for i in range(c.num_hidden_layers):
                    p = "model.layers.%d." % i
                    tsd["layers.%d.mlp_norm.scale" % i] = hf_sd[p + "pre_feedforward_layernorm.weight"]
                    tsd["layers.%d.mlp_scale.scale" % i] = hf_sd[p + "post_feedforward_layernorm.weight"]
        elif mt == "mistral":
            from torchtune.models.mistral._component_builders import mistral
            from torchtune.models.convert_weights import hf_to_tune
            if head_dim != c.hidden_size // c.num_attention_heads:
                die("torchtune's mistral builder has no explicit head_dim")
            model = mistral(**common, intermediate_dim=c.intermediate_size, norm_eps=c.rms_norm_eps,
                            rope_base=c.rope_theta)
            tsd = hf_to_tune(hf_sd, **conv, head_dim=head_dim)
        elif mt == "phi3":
            from torchtune.models.phi3._component_builders import phi3
            from torchtune.models.phi3._convert_weights import phi3_hf_to_tune
            model = phi3(**common, intermediate_dim=c.intermediate_size, norm_eps=c.rms_norm_eps,
                         rope_base=c.rope_theta)
            tsd = phi3_hf_to_tune(hf_sd, **conv)
        else:
            die("no torchtune model for %s" % mt)
    finally:
        torch.set_default_dtype(prev)
    model.load_state_dict({k: v.to(dtype) for k, v in tsd.items()}, strict=True)
    return model


def tt_to_hf(ctx, cfg, tsd):
    """torchtune state dict -> HF names and layouts, through torchtune's own converters."""
    c = cfg
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    conv = dict(num_heads=c.num_attention_heads, num_kv_heads=c.num_key_value_heads, dim=c.hidden_size)
    mt = c.model_type
    if mt in ("llama", "gemma", "mistral"):
        from torchtune.models.convert_weights import tune_to_hf
        return tune_to_hf(tsd, **conv, head_dim=head_dim)
    if mt == "qwen2":
        from torchtune.models.qwen2._convert_weights import qwen2_tune_to_hf
        return qwen2_tune_to_hf(tsd, **conv, head_dim=head_dim, tie_word_embeddings=c.tie_word_embeddings)
    if mt == "gemma2":
        from torchtune.models.gemma2._convert_weights import gemma2_tune_to_hf
        return gemma2_tune_to_hf(tsd, **conv, head_dim=head_dim)
    if mt == "phi3":
        from torchtune.models.phi3._convert_weights import phi3_tune_to_hf
        return phi3_tune_to_hf(tsd)
    die("no torchtune conversion for %s" % mt)


class Impl:
    """One implementation of a model: forward(ids) -> float logits, parameters, HF state."""

    def __init__(self, kind, model, hf_state, builder):
        self.kind, self.model, self._hf_state, self.builder = kind, model, hf_state, builder

    def forward(self, ids):
        if self.kind == "transformers":
            return self.model(input_ids=ids, use_cache=False).logits
        return self.model(ids)

    def forward_aux(self, ids):
        """(logits, aux): aux is transformers' own load-balancing loss of this forward,
        load_balancing_loss_func over every sparse layer's router logits with attention_mask None
        (every position, padding included), as Qwen3MoeForCausalLM returns it in aux_loss."""
        out = self.model(input_ids=ids, use_cache=False, output_router_logits=True)
        return out.logits, out.aux_loss

    def router_aux_coef(self):
        """router_aux_loss_coef where the model's config turns the load-balancing loss on
        (output_router_logits true), else None."""
        if self.kind != "transformers":
            return None
        tc = self.model.config.get_text_config()
        if not getattr(tc, "output_router_logits", False):
            return None
        if tc.model_type != "qwen3_moe":
            die("the router load-balancing loss is only reproduced for qwen3_moe, not %s" % tc.model_type)
        return float(tc.router_aux_loss_coef)

    def hf_state(self):
        return self._hf_state(self.model)


def make_impl(ctx, kind, fixture_dir, cfg, ckpt):
    keys = set(ckpt)
    if kind == "transformers":
        model = hf_from_dir(ctx, fixture_dir)
        got = model.state_dict()
        for k, v in ckpt.items():
            if not ctx.torch.equal(got[k], v.float()):
                die("transformers did not load %s as stored" % k)

        def hf_state(m):
            sd = m.state_dict()
            return {k: sd[k] for k in sorted(keys)}
        return Impl(kind, model, hf_state, "transformers." + model.__class__.__name__)
    model = tt_build(ctx, cfg, {k: v.float() for k, v in ckpt.items()}, ctx.torch.float32)

    def hf_state(m):
        sd = tt_to_hf(ctx, cfg, {k: v.detach() for k, v in m.state_dict().items()})
        if set(sd) != keys:
            die("torchtune's conversion back to HF names gave %s, checkpoint has %s"
                % (sorted(set(sd) ^ keys), sorted(keys)))
        return {k: sd[k] for k in sorted(keys)}
    # The round trip must give the checkpoint back exactly.
    for k, v in hf_state(model).items():
        if not ctx.torch.equal(v, ckpt[k].float()):
            die("torchtune round trip changed %s" % k)
    return Impl(kind, model, hf_state, "torchtune.models.%s" % tt_builder_name(cfg))


# ----------------------------------------------------------------------------
# The recipe's training loop (full_finetune_distributed semantics, world size 1)
# ----------------------------------------------------------------------------
def parse_hp(hp):
    if hp.get("label_shift", "none") != "none":
        die("label_shift %r is not supported" % hp.get("label_shift"))
    out = dict(lr=float(hp["lr"]), steps=int(hp["steps"]), batch_size=int(hp["batch_size"]),
               grad_accum=int(hp.get("grad_accum", "1")), epochs=int(hp.get("epochs", "1")),
               warmup=int(hp["warmup"]) if "warmup" in hp else None,
               clip=float(hp["clip_grad_norm"]) if "clip_grad_norm" in hp else None,
               weight_decay=float(hp.get("weight_decay", "0.01")),
               shuffle=hp.get("shuffle", False) in (True, "true", "True", "1"))
    if out["warmup"] is None and hp.get("scheduler", "none") != "none":
        die("scheduler %r is not supported" % hp["scheduler"])
    return out


def step_plan(ctx, n, hp):
    """[(epoch, [[micro-batch indices] * grad_accum]) per optimizer step]."""
    torch = ctx.torch
    plan = []
    for epoch in range(hp["epochs"]):
        if hp["shuffle"]:
            g = torch.Generator()
            g.manual_seed(0 + epoch)
            idx = torch.randperm(n, generator=g).tolist()
        else:
            idx = list(range(n))
        idx = idx[0::1]  # DistributedSampler split, rank 0 of 1
        bs = hp["batch_size"]
        mbs = [idx[i:i + bs] for i in range(0, len(idx) - bs + 1, bs)]  # drop_last
        ga = hp["grad_accum"]
        nsteps = min(len(mbs) // ga, hp["steps"])
        for s in range(nsteps):
            plan.append((epoch, mbs[s * ga:(s + 1) * ga]))
    return plan


def collate(ctx, samples, idxs):
    torch = ctx.torch
    L = max(len(samples[i]["tokens"]) for i in idxs)
    toks = torch.zeros((len(idxs), L), dtype=torch.long)
    labs = torch.full((len(idxs), L), -100, dtype=torch.long)
    for r, i in enumerate(idxs):
        t, l = samples[i]["tokens"], samples[i]["labels"]
        toks[r, :len(t)] = torch.tensor(t)
        labs[r, :len(l)] = torch.tensor(l)
    shifted = torch.cat([labs[:, 1:], torch.full((len(idxs), 1), -100, dtype=torch.long)], dim=1)
    return toks, shifted


class RunProbe:
    """Watches a reference run of a mixture-of-experts model without changing it.

    Forward hooks on the routers (Qwen3MoeSparseMoeBlock.gate, MixtralSparseMoeBlock.gate,
    Llama4Router, whose output is (scores, logits)) record, over every forward of the run (the
    initial per-sample forwards and every micro-batch of every step; every MoE layer; every
    token, padding positions included), the smallest gap between the k-th and (k+1)-th largest
    router logit (k = num_experts_per_tok), absolute and relative to the scale of that router
    call's logits (their root mean square over all tokens and experts of the call). The training
    loop also reports which parameters had no gradient (grad None) at each optimizer step."""

    ROUTED = {"Qwen3MoeSparseMoeBlock": ("gate", None), "MixtralSparseMoeBlock": ("gate", None),
              "Llama4Router": ("", 1)}

    def __init__(self, ctx, cfg):
        self.ctx, self.k = ctx, cfg.get_text_config().num_experts_per_tok
        self.phase, self.handles = "initial", []
        self.min_abs, self.min_rel, self.where = math.inf, math.inf, None
        self.per_router, self.calls, self.tokens = {}, 0, 0
        self.no_grad = {}  # step -> names with grad None

    def attach(self, model):
        for name, m in model.named_modules():
            spec = self.ROUTED.get(type(m).__name__)
            if spec is None:
                continue
            sub, idx = spec
            mod = getattr(m, sub) if sub else m
            rname = name + ("." + sub if sub else "")
            self.per_router.setdefault(rname, math.inf)
            self.handles.append(mod.register_forward_hook(self._hook(rname, idx)))
        if not self.handles:
            die("no router modules found in %s" % type(model).__name__)

    def detach(self):
        for h in self.handles:
            h.remove()
        self.handles = []

    def _hook(self, rname, idx):
        torch = self.ctx.torch

        def hook(mod, inp, out):
            lg = (out if idx is None else out[idx]).detach().double()
            lg = lg.reshape(-1, lg.shape[-1])
            top = torch.topk(lg, self.k + 1, dim=-1).values
            gap = top[:, self.k - 1] - top[:, self.k]
            scale = lg.pow(2).mean().sqrt().item()
            g, i = gap.min(0)
            g, i = g.item(), i.item()
            rel = g / scale
            self.calls += 1
            self.tokens += lg.shape[0]
            self.per_router[rname] = min(self.per_router[rname], rel)
            self.min_abs = min(self.min_abs, g)
            if rel < self.min_rel:
                self.min_rel = rel
                self.where = "%s, %s, token row %d (gap %.4g, call logit rms %.4g)" % (
                    self.phase, rname, i, g, scale)
        return hook

    def grads(self, step, model):
        self.no_grad[step] = [n for n, p in model.named_parameters() if p.grad is None]

    def record(self):
        names = sorted({n for v in self.no_grad.values() for n in v})
        return {
            "router_gap": {
                "top_k": self.k,
                "measure": ("over every forward of the float32 reference run (initial per-sample forwards, "
                            "every micro-batch of every step), every router, every token including padding: "
                            "gap = k-th minus (k+1)-th largest router logit; rel = gap / root mean square of "
                            "that router call's logits"),
                "min_abs_gap": self.min_abs, "min_rel_gap": self.min_rel, "at": self.where,
                "per_router_min_rel_gap": self.per_router, "router_calls": self.calls,
                "token_evaluations": self.tokens},
            "params_without_grad": {
                "per_step_count": [len(self.no_grad[s]) for s in sorted(self.no_grad)],
                "names": names},
        }


def train(ctx, impl, samples, hp, probe=None):
    torch = ctx.torch
    from torchtune.training.lr_schedulers import get_cosine_schedule_with_warmup
    model = impl.model
    model.train()
    params = list(model.parameters())
    opt = torch.optim.AdamW(params, lr=hp["lr"], betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=hp["weight_decay"], foreach=False)
    plan = step_plan(ctx, len(samples), hp)
    sched = None
    if hp["warmup"] is not None:
        sched = get_cosine_schedule_with_warmup(opt, num_warmup_steps=hp["warmup"],
                                                num_training_steps=hp["steps"] * hp["epochs"], num_cycles=0.5)
    # Router load-balancing loss (config output_router_logits true): each micro-batch backpropagates
    # CE_sum + coef * aux * n_mb (n_mb its target tokens), so that after the division by the step's
    # num_tokens N the gradient is that of sum_mb (CE_sum_mb + coef * aux_mb * n_mb) / N; with
    # grad_accum 1 that is transformers' own loss = CE_mean + coef * aux. The logged loss stays the
    # cross-entropy; router_aux_loss = sum_mb coef * aux_mb * n_mb / N.
    coef = impl.router_aux_coef()
    log, order = [], []
    for step, (epoch, mbs) in enumerate(plan, start=1):
        opt.zero_grad(set_to_none=True)
        running, num_tokens, aux_running = None, 0, 0.0
        for mi, mb in enumerate(mbs):
            if probe is not None:
                probe.phase = "step %d micro-batch %d" % (step, mi)
            toks, labels = collate(ctx, samples, mb)
            n_mb = int((labels != -100).sum())
            num_tokens += n_mb
            if coef is None:
                logits = impl.forward(toks)
            else:
                logits, aux = impl.forward_aux(toks)
            loss = torch.nn.functional.cross_entropy(
                logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1),
                ignore_index=-100, reduction="sum")
            running = loss.detach() if running is None else running + loss.detach()
            if coef is None:
                loss.backward()
            else:
                (loss + coef * aux * n_mb).backward()
                aux_running += coef * aux.item() * n_mb
        if probe is not None:
            probe.grads(step, model)
        scale = torch.tensor(1.0 / num_tokens)
        for p in params:
            if p.grad is not None:
                p.grad.mul_(scale)
        if hp["clip"] is not None:
            gn = torch.nn.utils.clip_grad_norm_(params, max_norm=hp["clip"])
        else:
            gn = torch.nn.utils.get_total_norm([p.grad for p in params if p.grad is not None])
        lr_applied = opt.param_groups[0]["lr"]
        opt.step()
        opt.zero_grad(set_to_none=True)
        if sched is not None:
            sched.step()
        gn = float(gn)
        row = {"step": step, "epoch": epoch, "loss": running.item() / num_tokens}
        if coef is not None:
            row["router_aux_loss"] = aux_running / num_tokens
        row.update({"lr": opt.param_groups[0]["lr"], "lr_applied": lr_applied, "grad_norm": gn,
                    "num_tokens": num_tokens, "clipped": bool(hp["clip"] is not None and gn > hp["clip"])})
        log.append(row)
        order.append({"step": step, "epoch": epoch, "ranks": [[list(mb) for mb in mbs]]})
    return log, order


def initial_stats(ctx, impl, samples, builder, data_name="data.jsonl", probe=None):
    torch = ctx.torch
    F = torch.nn.functional
    impl.model.eval()
    total, ntgt = 0.0, 0
    logits0 = None
    longest = max(range(len(samples)), key=lambda i: (len(samples[i]["tokens"]), -i))
    longest_logits = None
    with torch.no_grad():
        for i, s in enumerate(samples):
            if probe is not None:
                probe.phase = "initial sample %d" % i
            toks, labels = collate(ctx, samples, [i])
            lg = impl.forward(toks).float()[0]
            lab = labels[0]
            ce = F.cross_entropy(lg.double(), lab, ignore_index=-100, reduction="sum").item()
            n = int((lab != -100).sum())
            total += ce
            ntgt += n
            if i == 0:
                logits0, loss0, n0 = lg, ce / n, n
            if i == longest:
                longest_logits = lg
    return {
        "sample0_tokens": samples[0]["tokens"],
        "sample0_logits_8x8": logits0[:8, :8].tolist(),
        "sample0_logits_sum": logits0.double().sum().item(),
        "sample0_logits_abs_sum": logits0.double().abs().sum().item(),
        "sample0_logits_last_pos_first8": logits0[-1, :8].tolist(),
        "sample0_loss": loss0,
        "sample0_num_targets": n0,
        "longest_sample_index": longest,
        "longest_sample_len": len(samples[longest]["tokens"]),
        "longest_sample_last_pos_logits_first8": longest_logits[-1, :8].tolist(),
        "longest_sample_logits_sum": longest_logits.double().sum().item(),
        "dataset_loss": total / ntgt,
        "dataset_num_targets": ntgt,
        "builder": builder,
        "label_shift": "none",
        "data": data_name,
    }


def weight_stats(state):
    out = {}
    for k in sorted(state):
        t = state[k].detach().float()
        out[k] = {"shape": list(t.shape), "sum": t.double().sum().item(),
                  "sumsq": t.double().pow(2).sum().item(), "first4": t.reshape(-1)[:4].tolist()}
    return out


def run_case(ctx, kind, fixture_dir, cfg, ckpt, samples, hp, probe=None):
    impl = make_impl(ctx, kind, fixture_dir, cfg, ckpt)
    if probe is not None:
        probe.attach(impl.model)
    init = initial_stats(ctx, impl, samples, impl.builder, probe=probe)
    log, order = train(ctx, impl, samples, hp, probe=probe)
    if probe is not None:
        probe.detach()
        probe.final_state = impl.hf_state()
    final = weight_stats(impl.hf_state())
    return init, log, order, final


# ----------------------------------------------------------------------------
# float64 reference comparison
# ----------------------------------------------------------------------------
def fp64_outputs(ctx, build, samples, post=None):
    """Logits (float64) of every sample and the dataset loss, from one right-padded batch
    of all samples (causal attention: the padding never reaches a real position)."""
    torch = ctx.torch
    with ctx.Fp64Mode():
        model = build()
        model.eval()
        toks, labels = collate(ctx, samples, list(range(len(samples))))
        with torch.no_grad():
            if isinstance(model, ctx.transformers.PreTrainedModel):
                lg = model(input_ids=toks, use_cache=False).logits
            else:
                lg = model(toks)
            if post is not None:
                lg = post(lg)
            lg = lg.double()
            loss = torch.nn.functional.cross_entropy(lg.reshape(-1, lg.shape[-1]), labels.reshape(-1),
                                                     ignore_index=-100, reduction="sum").item()
    outs = [lg[i, :len(s["tokens"])] for i, s in enumerate(samples)]
    return outs, loss / int((labels != -100).sum())


def max_diff(a, b):
    d = max((x - y).abs().max().item() for x, y in zip(a, b))
    scale = max(x.abs().max().item() for x in b)
    return d, d / scale


def fmt(x):
    return "%.3g" % x


def compare_case(ctx, fixture, cfg, ckpt, samples):
    """Returns (reference, record, note) for one fixture."""
    torch = ctx.torch
    f64 = torch.float64
    sd = {k: v.double() for k, v in ckpt.items()}
    hf_logits, hf_loss = fp64_outputs(ctx, lambda: hf_from_config(ctx, cfg, sd, f64), samples)
    rec = {"transformers_fp64_dataset_loss": hf_loss}
    mt = cfg.model_type

    def variant(**changes):
        c2 = cfg.__class__.from_dict({**cfg.to_dict(), **changes})
        return fp64_outputs(ctx, lambda: hf_from_config(ctx, c2, sd, f64), samples)

    # Features the cases are meant to exercise must change the numbers measurably.
    if mt == "gemma2":
        for key in ("attn_logit_softcapping", "final_logit_softcapping"):
            _, l2 = variant(**{key: None})
            rel = abs(l2 - hf_loss) / abs(hf_loss)
            rec["without_" + key + "_rel_loss_change"] = rel
            if rel <= 1e-3:
                die("%s: %s=%s changes the initial loss by only %.3g relative" % (fixture, key, getattr(cfg, key), rel))
    if getattr(cfg, "sliding_window", None) and mt in ("gemma2", "mistral"):
        _, l2 = variant(sliding_window=None) if mt == "mistral" else variant(sliding_window=1 << 20)
        rel = abs(l2 - hf_loss) / abs(hf_loss)
        rec["without_sliding_window_rel_loss_change"] = rel
        if rel <= 1e-3:
            die("%s: sliding_window=%d changes the initial loss by only %.3g relative" % (fixture, cfg.sliding_window, rel))
    moe_variants = []
    if mt == "qwen3_moe":
        moe_variants = [("norm_topk_prob_flipped", dict(norm_topk_prob=not cfg.norm_topk_prob))]
    elif mt == "llama4_text":
        moe_variants = [("without_chunked_attention", dict(attention_chunk_size=1 << 20)),
                        ("without_attn_temperature_tuning", dict(attn_temperature_tuning=False)),
                        ("without_qk_norm", dict(use_qk_norm=False)),
                        ("without_rope_scaling", dict(rope_scaling=None))]
    for label, changes in moe_variants:
        _, l2 = variant(**changes)
        rel = abs(l2 - hf_loss) / abs(hf_loss)
        rec[label + "_rel_loss_change"] = rel
        if rel <= 1e-3:
            die("%s: %s changes the initial loss by only %.3g relative" % (fixture, label, rel))
    if mt == "llama4":
        # Text only, the multimodal model is its language model: Llama4ForCausalLM built from
        # text_config with the language_model.* weights must give the same logits.
        pre = "language_model."
        tsd = {k[len(pre):]: v for k, v in sd.items() if k.startswith(pre)}
        lm_logits, _ = fp64_outputs(ctx, lambda: hf_from_config(ctx, cfg.text_config, tsd, f64), samples)
        d, _ = max_diff(lm_logits, hf_logits)
        rec["fp64_max_abs_logit_diff_vs_Llama4ForCausalLM_on_text_config"] = d
        if d > 1e-12:
            die("%s: text-only Llama4ForConditionalGeneration differs from Llama4ForCausalLM by %.3g" % (fixture, d))
        # The vision tower and projector are a working model: one image (one image token after
        # the pixel shuffle) changes the logits from the image token on.
        vc, np = cfg.vision_config, ctx.np
        img = uniform_array(np, name_seed("image", fixture), vc.num_channels * vc.image_size ** 2)
        pix = torch.from_numpy(img.reshape(1, vc.num_channels, vc.image_size, vc.image_size) * 2.0 - 1.0)
        ids = torch.tensor([[1, cfg.boi_token_index, cfg.image_token_index, cfg.eoi_token_index, 5, 6, 7]])
        with ctx.Fp64Mode(), torch.no_grad():
            m = hf_from_config(ctx, cfg, sd, f64).eval()
            with_img = m(input_ids=ids, pixel_values=pix, use_cache=False).logits
            without = m(input_ids=ids, use_cache=False).logits
        moved = (with_img - without).abs().amax(-1)[0]
        rec["image_forward_max_abs_logit_change_per_position"] = [float("%.6g" % x) for x in moved.tolist()]
        if not (torch.isfinite(with_img).all() and moved[:2].max() == 0 and moved[2:].min() > 1e-6):
            die("%s: the vision tower does not act as expected: %s" % (fixture, moved.tolist()))

    if not tt_supported(cfg):
        rec["torchtune"] = TT_ABSENT.get(mt, "torchtune 0.6.1 has no %s model" % mt)
        note = ("%s; the trajectory comes from transformers %s %s "
                "(eager attention)." % (rec["torchtune"], ctx.transformers.__version__, cfg.architectures[0]))
        return "transformers", rec, note

    tt_logits, tt_loss = fp64_outputs(ctx, lambda: tt_build(ctx, cfg, sd, f64), samples)
    d, rel = max_diff(tt_logits, hf_logits)
    rec.update({"torchtune_fp64_dataset_loss": tt_loss, "fp64_max_abs_logit_diff": d,
                "fp64_max_rel_logit_diff": rel,
                "fp64_dataset_loss_rel_diff": abs(tt_loss - hf_loss) / abs(hf_loss)})
    if rel < AGREE_REL:
        note = ("torchtune's %s builder and transformers' %s agree in float64 (max |logit diff| %s, "
                "%s relative); the trajectory comes from torchtune."
                % (mt, cfg.architectures[0], fmt(d), fmt(rel)))
        return "torchtune", rec, note

    # torchtune deviates: explain the deviation by undoing it.
    if mt == "mistral":
        hf_nw, _ = variant(sliding_window=None)
        d2, rel2 = max_diff(tt_logits, hf_nw)
        rec["fp64_max_rel_logit_diff_vs_transformers_without_window"] = rel2
        why = ("torchtune's mistral has no sliding window (every layer attends to the whole causal "
               "prefix); against transformers with sliding_window=null it agrees to %s relative" % fmt(rel2))
    elif mt == "gemma2":
        def uncap_final_norm_then_cap_logits():
            m = tt_build(ctx, cfg, sd, f64, ff_norm_fix=True)
            m.norm = m.norm.rms_norm  # keep the final RMSNorm, drop its soft-capping
            return m
        cap = cfg.final_logit_softcapping
        fixed, _ = fp64_outputs(ctx, uncap_final_norm_then_cap_logits, samples,
                                post=lambda x: torch.tanh(x / cap) * cap)
        d2, rel2 = max_diff(fixed, hf_logits)
        ffonly, ffloss = fp64_outputs(ctx, lambda: tt_build(ctx, cfg, sd, f64, ff_norm_fix=True), samples)
        rec["fp64_max_rel_logit_diff_with_both_fixed"] = rel2
        rec["torchtune_ff_norms_fixed_fp64_dataset_loss"] = ffloss
        why = ("torchtune's gemma2 (component builder, caps passed as in HF: hidden_capping_value="
               "attn_logit_softcapping, final_capping_value=final_logit_softcapping) soft-caps the final "
               "RMSNorm output (Gemma2FinalNorm) instead of the logits, and gemma2_hf_to_tune swaps "
               "pre_feedforward_layernorm and post_feedforward_layernorm (loss with only the swap undone: "
               "%.9g); with both undone it agrees to %s relative. Its named builders also pass "
               "hidden_capping_value=30, final_capping_value=50, the reverse of HF's attn 50 / final 30"
               % (ffloss, fmt(rel2)))
    else:
        why = "unexplained deviation"
    note = ("torchtune's %s deviates from transformers' %s: float64 max |logit diff| %s (%s relative), "
            "initial dataset loss torchtune %.9g vs transformers %.9g. %s. The trajectory comes from "
            "transformers %s (eager attention)."
            % (mt, cfg.architectures[0], fmt(d), fmt(rel), tt_loss, hf_loss, why, ctx.transformers.__version__))
    return "transformers", rec, note


# ----------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------
def dump_json(path, obj, indent):
    with open(path, "w") as f:
        f.write(json.dumps(obj, indent=indent) + "\n")


def dump_jsonl(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def config_json(ctx, name, spec):
    """A config.json as transformers writes it for this model_type: every key of the
    model's own config class, plus the common ones a checkpoint carries."""
    tr = ctx.transformers
    cls = getattr(tr, spec["cls"])
    cfg = cls(**spec["kw"])
    cfg.architectures = [spec["arch"]]
    full = cfg.to_dict()
    base = set(tr.PretrainedConfig().to_dict())

    def own(d, common):
        o = {k: v for k, v in d.items() if k not in base}
        for k in common:
            if d.get(k) is not None:
                o[k] = d[k]
        return o

    out = own(full, ("architectures", "model_type", "bos_token_id", "eos_token_id", "pad_token_id",
                     "tie_word_embeddings", "transformers_version"))
    # Composite configs (Llama4Config): each sub-config as a dict of its own class's keys and its
    # model_type; the text one also carries its token ids and tie_word_embeddings.
    for sub in getattr(cls, "sub_configs", None) or {}:
        if isinstance(full.get(sub), dict):
            out[sub] = own(full[sub], ("model_type",) + (
                ("bos_token_id", "eos_token_id", "pad_token_id", "tie_word_embeddings")
                if sub == "text_config" else ()))
    out["torch_dtype"] = "float32"
    out.pop("dtype", None)
    # Round trip: AutoConfig must read back the same configuration.
    back = tr.AutoConfig.for_model(**{k: v for k, v in out.items() if k != "transformers_version"})
    for k, v in out.items():
        if k in ("torch_dtype", "transformers_version"):
            continue
        got = getattr(back, k)
        if isinstance(v, dict) and isinstance(got, tr.PretrainedConfig):
            for kk, vv in v.items():
                if getattr(got, kk) != vv:
                    die("%s: config key %s.%s does not round-trip (%r vs %r)" % (name, k, kk, getattr(got, kk), vv))
        elif got != v:
            die("%s: config key %s does not round-trip (%r vs %r)" % (name, k, got, v))
    return out


def make_weights(ctx, name, spec, cfg):
    """Deterministic fp32 weights under the HF names the published model uses."""
    torch, np = ctx.torch, ctx.np
    with torch.device("meta"):
        shapes = {k: tuple(v.shape) for k, v in hf_build(ctx, cfg).state_dict().items()}
    if cfg.tie_word_embeddings:
        shapes.pop("lm_head.weight", None)
    sd = {}
    for k in sorted(shapes):
        shp = shapes[k]
        n = int(np.prod(shp))
        # weight_seed: a MoE fixture's seed, chosen so that no router decision is a near tie (and
        # for llama4_text so that each Llama 4 feature moves the initial loss by more than 2e-3).
        seed_name, seed_key, rules = spec.get("weight_seed", name), k, spec
        if spec.get("same_as") and k.startswith(spec["prefix"]):
            # The same numbers as the fixture this one wraps or repeats (language_model.X <- X).
            inner = spec["same_as"]
            rules = FIXTURES[inner]
            seed_name, seed_key = rules.get("weight_seed", inner), k[len(spec["prefix"]):]
        u = uniform_array(np, name_seed("w", seed_name, seed_key), n) * 2.0 - 1.0
        if k.endswith(".bias"):  # only the Llama 4 vision tower has biases
            vals = 0.1 * u
        elif "norm" in k:
            vals = 0.25 * u if rules["norm_plus_one"] else 1.0 + 0.25 * u
        elif "embed_tokens" in k:
            vals = rules.get("embed_scale", 0.5) * u
        else:
            if len(shp) == 2:    # nn.Linear [out, in] (and embeddings-like [n, dim])
                fan_in = shp[1]
            elif len(shp) == 3:  # Llama 4 experts [experts, in, out], applied as x @ W[e]
                fan_in = shp[1]
            else:                # the Llama 4 vision class embedding [dim]
                fan_in = shp[0]
            vals = u * math.sqrt(3.0 / fan_in)
            for part, factor in rules.get("weight_scale", {}).items():
                if part in k:
                    vals = vals * factor
        sd[k] = torch.from_numpy(vals.astype(np.float32).reshape(shp)).contiguous()
    return sd


def write_fixture(ctx, out_dir, name, spec):
    d = os.path.join(out_dir, "fixtures", name)
    os.makedirs(d, exist_ok=True)
    cj = config_json(ctx, name, spec)
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write(json.dumps(cj, indent=2, sort_keys=True) + "\n")
    cfg = ctx.transformers.AutoConfig.from_pretrained(d)
    sd = make_weights(ctx, name, spec, cfg)
    ctx.save_file(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    os.chmod(os.path.join(d, "model.safetensors"), 0o644)
    samples = make_samples(spec.get("same_as", name), cfg.get_text_config().vocab_size)
    dump_jsonl(os.path.join(d, "data.jsonl"), samples)
    return d


def load_fixture(ctx, d):
    cfg = ctx.transformers.AutoConfig.from_pretrained(d)
    ckpt = ctx.load_file(os.path.join(d, "model.safetensors"))
    with open(os.path.join(d, "data.jsonl")) as f:
        samples = [json.loads(l) for l in f if l.strip()]
    return cfg, ckpt, samples


ROUTER_GAP_MIN_REL = 1e-4  # smallest allowed (k-th - (k+1)-th router logit) / rms(router logits)


def router_fp32_noise(ctx, d, cfg, ckpt, samples):
    """Router logits of the initial per-sample forwards, float32 (the fixture as loaded) against
    float64: the largest difference relative to the call's logit rms, and how many tokens'
    top-k selections differ. This is the scale the routing-gap threshold must stay above."""
    torch = ctx.torch

    def collect(model):
        out, hs = [], []
        for m in model.modules():
            spec = RunProbe.ROUTED.get(type(m).__name__)
            if spec is not None:
                mod = getattr(m, spec[0]) if spec[0] else m
                hs.append(mod.register_forward_hook(
                    lambda mod, i, o, idx=spec[1]: out.append((o if idx is None else o[idx]).detach().double())))
        model.eval()
        with torch.no_grad():
            for i in range(len(samples)):
                model(input_ids=collate(ctx, samples, [i])[0], use_cache=False)
        for h in hs:
            h.remove()
        return out

    a = collect(hf_from_dir(ctx, d))
    with ctx.Fp64Mode():
        b = collect(hf_from_config(ctx, cfg, {k: v.double() for k, v in ckpt.items()}, torch.float64))
    k = cfg.get_text_config().num_experts_per_tok
    rel = max(((x - y).abs().max() / y.pow(2).mean().sqrt()).item() for x, y in zip(a, b))
    flips = sum(int((torch.topk(x, k, -1).indices.sort(-1).values
                     != torch.topk(y, k, -1).indices.sort(-1).values).any(-1).sum()) for x, y in zip(a, b))
    return rel, flips


def check_saved_names(ctx, d, cfg, ckpt):
    """The checkpoint's key names are exactly the ones transformers' save_pretrained writes for
    this model (which may differ from the module names through _checkpoint_conversion_mapping)."""
    import tempfile
    model = hf_from_dir(ctx, d)
    with tempfile.TemporaryDirectory() as t:
        model.save_pretrained(t, safe_serialization=True)
        saved = set(ctx.load_file(os.path.join(t, "model.safetensors")))
    if saved != set(ckpt):
        die("%s: save_pretrained writes %s, the fixture has %s" % (d, sorted(saved - set(ckpt)),
                                                                  sorted(set(ckpt) - saved)))
    return dict(getattr(model, "_checkpoint_conversion_mapping", None) or {})


def rel_loss_diff(a, b):
    return max(abs(x["loss"] - y["loss"]) / abs(y["loss"]) for x, y in zip(a, b))


# Conditioning: the float32 golden against the same implementation's float64 run, per case. A
# tenth of the tests' tolerances (2e-4 relative for loss and grad_norm, 1e-4 for each final sum of
# squares), so that any correct float32 implementation reproduces the golden with margin.
FP64_TRAJECTORY_MAX_REL = {"loss": 2e-5, "grad_norm": 2e-5, "final_sumsq": 1e-5}


def fp64_trajectory(ctx, kind, cfg, ckpt, samples, hp):
    """The whole training run of implementation `kind` in float64: the model built in float64 from
    the float32 checkpoint, every float32 the library asks for turned into float64 (Fp64Mode),
    default dtype float64 (the 1/num_tokens scale), AdamW's state float64. Returns the step log
    and each checkpoint tensor's final sum of squares (in float64, unrounded)."""
    torch = ctx.torch
    f64 = torch.float64
    sd = {k: v.double() for k, v in ckpt.items()}
    keys = sorted(ckpt)
    prev = torch.get_default_dtype()
    torch.set_default_dtype(f64)
    try:
        with ctx.Fp64Mode():
            if kind == "transformers":
                model = hf_from_config(ctx, cfg, sd, f64)

                def hf_state(m):
                    s = m.state_dict()
                    return {k: s[k] for k in keys}
            else:
                model = tt_build(ctx, cfg, sd, f64)

                def hf_state(m):
                    s = tt_to_hf(ctx, cfg, {k: v.detach() for k, v in m.state_dict().items()})
                    return {k: s[k] for k in keys}
            if any(p.dtype != f64 for p in model.parameters()):
                die("%s: the float64 model has parameters of another dtype" % cfg.model_type)
            log, _ = train(ctx, Impl(kind, model, hf_state, "float64"), samples, hp)
            sumsq = {k: v.detach().double().pow(2).sum().item() for k, v in hf_state(model).items()}
    finally:
        torch.set_default_dtype(prev)
    return log, sumsq


AUX_MIN_REL_GRAD_NORM_CHANGE = 1e-3  # the aux loss must move some step's grad_norm by more than this


def router_aux_checks(ctx, case, kind, cfg, ckpt, samples, hp, log64):
    """For a case with the router load-balancing loss on, in float64: (1) at the initial weights,
    for the first optimizer step's micro-batch(es), the objective train() backpropagates divided by
    n_mb, (CE_sum + coef * aux * n_mb) / n_mb, equals the loss Qwen3MoeForCausalLM computes itself
    when given the labels (CE_mean + router_aux_loss_coef * aux), value and gradient; (2) the whole
    run without the aux loss (output_router_logits false) changes some step's grad_norm by more
    than AUX_MIN_REL_GRAD_NORM_CHANGE relative."""
    torch = ctx.torch
    f64 = torch.float64
    sd = {k: v.double() for k, v in ckpt.items()}
    coef = float(cfg.router_aux_loss_coef)
    rec = {"router_aux_loss_coef": coef,
           "objective": ("per micro-batch CE_sum + router_aux_loss_coef * aux * n_mb, aux = transformers' "
                         "load_balancing_loss_func over the sparse layers' router logits (attention_mask "
                         "None: every position, padding included), n_mb = the micro-batch's target tokens; "
                         "gradients / the step's num_tokens; logged loss = CE only; router_aux_loss = "
                         "token-weighted mean over the step's micro-batches of coef * aux")}
    worst_loss, worst_grad = 0.0, 0.0
    prev = torch.get_default_dtype()
    torch.set_default_dtype(f64)
    try:
        with ctx.Fp64Mode():
            model = hf_from_config(ctx, cfg, sd, f64)
            model.train()
            impl = Impl(kind, model, None, "float64")
            for mb in step_plan(ctx, len(samples), hp)[0][1]:
                toks, labels = collate(ctx, samples, mb)
                n = int((labels != -100).sum())
                model.zero_grad(set_to_none=True)
                logits, aux = impl.forward_aux(toks)
                ce = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                                                       labels.reshape(-1), ignore_index=-100, reduction="sum")
                ours = (ce + coef * aux * n) / n
                ours.backward()
                g1 = {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}
                # transformers shifts the labels itself: give them unshifted (position 0's label
                # never counts; collate's last column is always -100).
                unshifted = torch.cat([torch.full((labels.shape[0], 1), -100, dtype=labels.dtype),
                                       labels[:, :-1]], dim=1)
                model.zero_grad(set_to_none=True)
                theirs = model(input_ids=toks, labels=unshifted, use_cache=False).loss
                theirs.backward()
                g2 = {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}
                if sorted(g1) != sorted(g2):
                    die("%s: the aux objective and transformers' loss give gradients to different parameters" % case)
                worst_loss = max(worst_loss, abs(ours.item() - theirs.item()) / abs(theirs.item()))
                worst_grad = max(worst_grad, max(((g1[k] - g2[k]).norm() / g2[k].norm()).item()
                                                 for k in g2 if g2[k].norm() > 0))
            model.zero_grad(set_to_none=True)
    finally:
        torch.set_default_dtype(prev)
    rec["fp64_step1_objective_vs_transformers_loss_rel_diff"] = worst_loss
    rec["fp64_step1_gradient_vs_transformers_loss_max_rel_diff"] = worst_grad
    if worst_loss > 1e-12 or worst_grad > 1e-10:
        die("%s: the aux objective differs from transformers' own loss (value %.3g, gradient %.3g relative)"
            % (case, worst_loss, worst_grad))
    # The same run without the aux loss.
    off = cfg.__class__.from_dict({**cfg.to_dict(), "output_router_logits": False})
    log_off, _ = fp64_trajectory(ctx, kind, off, ckpt, samples, hp)
    per = [abs(a["grad_norm"] - b["grad_norm"]) / abs(b["grad_norm"]) for a, b in zip(log_off, log64)]
    rec["without_router_aux_loss_per_step_rel_grad_norm_change"] = [float("%.3g" % x) for x in per]
    rec["without_router_aux_loss_max_rel_grad_norm_change"] = max(per)
    rec["without_router_aux_loss_max_rel_grad_norm_change_step"] = log64[per.index(max(per))]["step"]
    per_loss = [abs(a["loss"] - b["loss"]) / abs(b["loss"]) for a, b in zip(log_off, log64)]
    rec["without_router_aux_loss_max_rel_loss_change"] = max(per_loss)
    rec["without_router_aux_loss_clipped_differs_at_steps"] = [
        a["step"] for a, b in zip(log_off, log64) if a["clipped"] != b["clipped"]]
    if max(per) <= AUX_MIN_REL_GRAD_NORM_CHANGE:
        die("%s: router_aux_loss_coef %g changes no step's grad_norm by more than %g relative (at most %.3g)"
            % (case, coef, AUX_MIN_REL_GRAD_NORM_CHANGE, max(per)))
    return rec


def fp64_conditioning(case, log32, final32, log64, sumsq64):
    """Max relative differences of the float32 trajectory from the float64 one."""
    rec = {"measure": ("the reference implementation's whole training run repeated in float64 (model, "
                       "optimizer state and every computation); rel = |fp32 - fp64| / |fp64|, max over "
                       "steps (loss, grad_norm) or over the final checkpoint tensors (sumsq)"),
           "limits": dict(FP64_TRAJECTORY_MAX_REL)}
    for key in ("loss", "grad_norm"):
        per = [abs(a[key] - b[key]) / abs(b[key]) for a, b in zip(log32, log64)]
        rec["per_step_rel_%s_diff" % key] = [float("%.3g" % x) for x in per]
        rec["max_rel_%s_diff" % key] = max(per)
        rec["max_rel_%s_diff_step" % key] = log32[per.index(max(per))]["step"]
    per = {k: abs(final32[k]["sumsq"] - v) / abs(v) if v else abs(final32[k]["sumsq"]) for k, v in sumsq64.items()}
    worst = max(sorted(per), key=lambda k: per[k])
    rec["max_rel_final_sumsq_diff"] = per[worst]
    rec["max_rel_final_sumsq_diff_tensor"] = worst
    rec["clipped_differs_at_steps"] = [a["step"] for a, b in zip(log32, log64) if a["clipped"] != b["clipped"]]
    bad = []
    if "router_aux_loss" in log32[0]:
        # Held to the loss limit.
        per = [abs(a["router_aux_loss"] - b["router_aux_loss"]) / abs(b["router_aux_loss"])
               for a, b in zip(log32, log64)]
        rec["per_step_rel_router_aux_loss_diff"] = [float("%.3g" % x) for x in per]
        rec["max_rel_router_aux_loss_diff"] = max(per)
        rec["max_rel_router_aux_loss_diff_step"] = log32[per.index(max(per))]["step"]
        if max(per) > FP64_TRAJECTORY_MAX_REL["loss"]:
            bad.append("router_aux_loss %.3g (step %d; limit %g)" % (
                max(per), rec["max_rel_router_aux_loss_diff_step"], FP64_TRAJECTORY_MAX_REL["loss"]))
    for key, limit in FP64_TRAJECTORY_MAX_REL.items():
        got = rec["max_rel_%s_diff" % key]
        if got > limit:
            at = ("tensor %s" % worst if key == "final_sumsq" else "step %d" % rec["max_rel_%s_diff_step" % key])
            bad.append("%s %.3g (%s; limit %g)" % (key, got, at, limit))
    if rec["clipped_differs_at_steps"]:
        bad.append("the clipping decision at steps %s" % rec["clipped_differs_at_steps"])
    if bad:
        die("%s: the float32 trajectory differs from the same implementation's float64 run by %s: float32 "
            "rounding is amplified in this case (limits: a tenth of the tests' tolerances), so another correct "
            "float32 implementation would match it only by chance; change the fixture or the case"
            % (case, "; ".join(bad)))
    return rec


def generate(ctx, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    stamp = os.path.join(out_dir, ".complete")
    if os.path.exists(stamp):
        os.remove(stamp)
    fixtures = {}
    for name, spec in FIXTURES.items():
        fixtures[name] = write_fixture(ctx, out_dir, name, spec)
    for name, spec in FIXTURES.items():
        if spec.get("same_as"):
            # The wrapped fixture's weights under the prefix, and its data.
            mine = ctx.load_file(os.path.join(fixtures[name], "model.safetensors"))
            theirs = ctx.load_file(os.path.join(fixtures[spec["same_as"]], "model.safetensors"))
            inner = {k[len(spec["prefix"]):]: v for k, v in mine.items() if k.startswith(spec["prefix"])}
            if sorted(inner) != sorted(theirs) or any(not ctx.torch.equal(inner[k], theirs[k]) for k in theirs):
                die("%s: %s* is not %s's checkpoint" % (name, spec["prefix"], spec["same_as"]))
            with open(os.path.join(fixtures[name], "data.jsonl")) as f1, \
                    open(os.path.join(fixtures[spec["same_as"]], "data.jsonl")) as f2:
                if f1.read() != f2.read():
                    die("%s: data differs from %s's" % (name, spec["same_as"]))
    cases, checks, lines = {}, {}, []
    inits = {}
    for case, fixture, hp_raw in CASES:
        d = fixtures[fixture]
        spec = FIXTURES[fixture]
        cfg, ckpt, samples = load_fixture(ctx, d)
        hp = parse_hp(hp_raw)
        reference, rec, note = compare_case(ctx, fixture, cfg, ckpt, samples)
        probe = RunProbe(ctx, cfg) if spec.get("moe") else None
        init, log, order, final = run_case(ctx, reference, d, cfg, ckpt, samples, hp, probe=probe)
        inits[fixture] = init
        if probe is not None:
            rec["checkpoint_conversion_mapping"] = check_saved_names(ctx, d, cfg, ckpt)
            rec.update(probe.record())
            noise, flips = router_fp32_noise(ctx, d, cfg, ckpt, samples)
            rec["router_gap"]["initial_fp32_vs_fp64_max_rel_logit_diff"] = noise
            rec["router_gap"]["initial_fp32_vs_fp64_selection_differences"] = flips
            if flips:
                die("%s: float32 and float64 route %d token(s) differently" % (case, flips))
            if probe.min_rel < ROUTER_GAP_MIN_REL:
                die("%s: a router's k-th and (k+1)-th logits come within %.3g (relative to the logits' rms) "
                    "at %s; routing could differ in another float32 implementation: change the fixture"
                    % (case, probe.min_rel, probe.where))
            # Parameters that never get a gradient (grad None) are skipped by AdamW (no update, no
            # weight decay): they must come out exactly as stored.
            never = set.intersection(*[set(v) for v in probe.no_grad.values()])
            unchanged = sorted(set(ckpt) & never)
            for k in unchanged:
                if not ctx.torch.equal(probe.final_state[k], ckpt[k].float()):
                    die("%s: %s had no gradient but changed" % (case, k))
            rec["params_without_grad"]["unchanged_after_training"] = len(unchanged)
        if spec.get("same_as") and spec["same_as"] in inits:
            other_init = inits[spec["same_as"]]
            diff = sorted(k for k in init if k != "builder" and init[k] != other_init[k])
            if diff:
                die("%s: initial stats differ from %s's in %s" % (case, spec["same_as"], diff))
            rec["initial_stats_identical_to_fixture"] = spec["same_as"]
        if hp["clip"] is not None:
            for row in log:
                if abs(row["grad_norm"] - hp["clip"]) <= 1e-3 * hp["clip"]:
                    die("%s step %d: grad_norm %.6g is too close to clip_grad_norm %g for an unambiguous "
                        "clipping decision; pick another clip value" % (case, row["step"], row["grad_norm"], hp["clip"]))
        # Conditioning: the same implementation's float64 run must agree with the float32 golden.
        log64, sumsq64 = fp64_trajectory(ctx, reference, cfg, ckpt, samples, hp)
        rec["fp32_vs_fp64_trajectory"] = fp64_conditioning(case, log, final, log64, sumsq64)
        if "router_aux_loss" in log[0]:
            rec["router_aux_loss"] = router_aux_checks(ctx, case, reference, cfg, ckpt, samples, hp, log64)
            note += (" The objective adds the router load-balancing loss: per micro-batch CE_sum + "
                     "router_aux_loss_coef (%g) * aux * n_mb, aux = transformers' load_balancing_loss_func "
                     "(attention_mask None), checked equal in float64 to Qwen3MoeForCausalLM's own loss with "
                     "labels (grad_accum 1); the logged loss is the cross-entropy alone and router_aux_loss "
                     "= coef * aux. Without it some step's grad_norm changes by %.3g relative."
                     % (cfg.router_aux_loss_coef, rec["router_aux_loss"]["without_router_aux_loss_max_rel_grad_norm_change"]))
        # Cross-check: the other implementation's fp32 trajectory, where there is one.
        other = "torchtune" if reference == "transformers" else "transformers"
        if other == "transformers" or tt_supported(cfg):
            _, log2, order2, _ = run_case(ctx, other, d, cfg, ckpt, samples, hp)
            assert order2 == order
            rec["fp32_%s_trajectory_max_rel_loss_diff" % other] = rel_loss_diff(log2, log)
        checks[case] = dict(reference=reference, **rec)
        files = {k: "%s.%s" % (case, ext) for k, ext in
                 (("expected", "expected.jsonl"), ("initial", "initial.json"),
                  ("final_weights", "final_weights.json"), ("order", "order.jsonl"))}
        cases[case] = {"fixture": "fixtures/" + fixture, "files": files, "hyperparameters": hp_raw,
                       "reference": reference, "note": note}
        dump_jsonl(os.path.join(out_dir, files["expected"]), log)
        dump_json(os.path.join(out_dir, files["initial"]), init, 1)
        dump_json(os.path.join(out_dir, files["final_weights"]), final, 1)
        dump_jsonl(os.path.join(out_dir, files["order"]), order)
        tt_rel = rec.get("fp64_max_rel_logit_diff")
        cross = rec.get("fp32_%s_trajectory_max_rel_loss_diff" % other)
        cond = rec["fp32_vs_fp64_trajectory"]
        lines.append("%-25s reference=%-12s fp64 tt-vs-hf max|dlogit|=%-26s initial loss=%.6f  "
                     "fp32 %s trajectory: max rel loss diff %s; fp32 vs fp64 max rel: loss %.2g, "
                     "grad_norm %.2g, final sumsq %.2g"
                     % (case, reference,
                        "n/a (torchtune has none)" if tt_rel is None
                        else "%.3g (rel %.3g)" % (rec["fp64_max_abs_logit_diff"], tt_rel),
                        init["dataset_loss"], other, "n/a" if cross is None else fmt(cross),
                        cond["max_rel_loss_diff"], cond["max_rel_grad_norm_diff"],
                        cond["max_rel_final_sumsq_diff"]))
    dump_json(os.path.join(out_dir, "cases.json"), cases, 1)
    dump_json(os.path.join(out_dir, "reference_check.json"), checks, 1)
    with open(stamp, "w") as f:
        f.write("transformers %s, torchtune %s, torch %s\n" % (
            ctx.transformers.__version__, ctx.torchtune.__version__, ctx.torch.__version__))
    return lines


# ----------------------------------------------------------------------------
# Self-check against the shared goldens
# ----------------------------------------------------------------------------
def close(a, b, rel, absfloor=0.0):
    return abs(a - b) <= rel * abs(b) + absfloor


def check_against(case, kind, exp_dir, meta, init, log, order, final):
    errs = []
    with open(os.path.join(exp_dir, meta["files"]["expected"])) as f:
        exp = [json.loads(l) for l in f if l.strip()]
    with open(os.path.join(exp_dir, meta["files"]["order"])) as f:
        exp_order = [json.loads(l) for l in f if l.strip()]
    with open(os.path.join(exp_dir, meta["files"]["initial"])) as f:
        exp_init = json.load(f)
    with open(os.path.join(exp_dir, meta["files"]["final_weights"])) as f:
        exp_final = json.load(f)
    worst = {"loss": 0.0, "lr": 0.0, "grad_norm": 0.0, "logits": 0.0, "sumsq": 0.0}
    if len(exp) != len(log):
        errs.append("%d steps, expected %d" % (len(log), len(exp)))
    for g, e in zip(log, exp):
        for k in ("loss", "lr", "lr_applied", "grad_norm"):
            r = abs(g[k] - e[k]) / abs(e[k]) if e[k] else abs(g[k])
            worst[k.replace("_applied", "")] = max(worst[k.replace("_applied", "")], r)
            if not close(g[k], e[k], 2e-4, 1e-12):
                errs.append("step %d %s %r vs %r" % (e["step"], k, g[k], e[k]))
        for k in ("num_tokens", "clipped", "epoch"):
            if k in e and g[k] != e[k]:
                errs.append("step %d %s %r vs %r" % (e["step"], k, g[k], e[k]))
    if [o["ranks"] for o in order] != [o["ranks"] for o in exp_order]:
        errs.append("data order differs")
    for k in ("sample0_logits_8x8", "sample0_logits_last_pos_first8", "longest_sample_last_pos_logits_first8"):
        a, b = init[k], exp_init[k]
        flat = (lambda x: [v for r in x for v in r]) if k.endswith("8x8") else (lambda x: x)
        d = max(abs(x - y) for x, y in zip(flat(a), flat(b)))
        worst["logits"] = max(worst["logits"], d)
        if d > 1e-4:
            errs.append("initial %s differs by %.3g" % (k, d))
    for k in ("sample0_loss", "dataset_loss"):
        if not close(init[k], exp_init[k], 2e-4):
            errs.append("initial %s %r vs %r" % (k, init[k], exp_init[k]))
    for k in ("sample0_num_targets", "longest_sample_index", "longest_sample_len", "dataset_num_targets"):
        if init[k] != exp_init[k]:
            errs.append("initial %s %r vs %r" % (k, init[k], exp_init[k]))
    if sorted(final) != sorted(exp_final):
        errs.append("final weight names differ: %s" % sorted(set(final) ^ set(exp_final)))
    for k in exp_final:
        if k in final:
            if final[k]["shape"] != exp_final[k]["shape"]:
                errs.append("%s shape" % k)
            r = abs(final[k]["sumsq"] - exp_final[k]["sumsq"]) / abs(exp_final[k]["sumsq"])
            worst["sumsq"] = max(worst["sumsq"], r)
            if r > 1e-4:
                errs.append("%s sumsq rel diff %.3g" % (k, r))
    summary = "%-22s via %-12s max rel diff: loss %.2g, lr %.2g, grad_norm %.2g; initial logits abs %.2g; final sumsq rel %.2g" % (
        case, kind, worst["loss"], worst["lr"], worst["grad_norm"], worst["logits"], worst["sumsq"])
    return errs, summary


def fixtures_root():
    """FT_FIXTURES, else shared/fixtures beside the repository (/work/shared/fixtures here)."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.environ.get("FT_FIXTURES") or os.path.join(os.path.dirname(repo), "shared", "fixtures")


def self_check(ctx):
    root = fixtures_root()
    gdir = os.path.join(root, "golden")
    path = os.path.join(gdir, "cases.json")
    if not os.path.exists(path):
        die("self-check: %s not found (set FT_FIXTURES)" % path)
    with open(path) as f:
        shared = json.load(f)
    # llama3_untied_ga2 is the required one; the others validate shuffle, clipping,
    # weight decay, tied embeddings and BF16 checkpoints as well.
    order = ["llama3_untied_ga2"] + sorted(k for k in shared if k != "llama3_untied_ga2")
    failed, lines = False, []
    for case in order:
        meta = shared[case]
        d = os.path.join(gdir, meta["fixture"])
        cfg, ckpt, samples = load_fixture(ctx, d)
        hp = parse_hp(meta["hyperparameters"])
        for kind in ("torchtune", "transformers"):
            init, log, order_, final = run_case(ctx, kind, d, cfg, ckpt, samples, hp)
            errs, summary = check_against(case, kind, gdir, meta, init, log, order_, final)
            lines.append(("PASS " if not errs else "FAIL ") + summary)
            for e in errs[:10]:
                lines.append("    " + e)
            failed |= bool(errs)
    return failed, lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="output directory for the generated goldens")
    ap.add_argument("--self-check", action="store_true",
                    help="reproduce the shared goldens (FT_FIXTURES/golden) with this training loop first")
    ap.add_argument("--allow-other-versions", action="store_true",
                    help="run with reference versions other than the pinned ones (results may differ)")
    args = ap.parse_args()
    if not args.out and not args.self_check:
        ap.error("give --out DIR and/or --self-check")
    t0 = time.time()
    mods = import_references(args.allow_other_versions)
    torch = mods["torch"]
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    mods["transformers"].logging.set_verbosity_error()
    ctx = Ctx(mods)
    rc = 0
    if args.self_check:
        failed, lines = self_check(ctx)
        print("self-check against %s/golden:" % fixtures_root())
        for l in lines:
            print("  " + l)
        if failed:
            print("self-check FAILED")
            rc = 1
        else:
            print("self-check passed")
    if args.out and rc == 0:
        lines = generate(ctx, args.out)
        for l in lines:
            print(l)
        print("wrote %s (%d cases) in %.1f s" % (args.out, len(lines), time.time() - t0))
    elif rc == 0:
        print("done in %.1f s" % (time.time() - t0))
    return rc


if __name__ == "__main__":
    sys.exit(main())
