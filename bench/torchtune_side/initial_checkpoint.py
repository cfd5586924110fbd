"""Writes the benchmark's initial weights as a Hugging Face Llama directory (model.safetensors,
config.json) that both torchtune's FullModelHFCheckpointer and fthost's read, so that the two
sides start from the same weights and their first losses can be compared.

  python initial_checkpoint.py OUT_DIR DTYPE '<model json>'

The weights are those of Hugging Face's Llama initialisation (every matrix normal with std
initializer_range = 0.02, the norms one; seed 0) on torchtune's own builder, converted with its
own tune_to_hf and stored in the run's dtype, so that both sides load the same values. torchtune's
builder alone leaves the embedding at nn.Embedding's std 1, which as a tied output projection
starts the loss near 700 instead of near ln(vocab).
"""
import json
import pathlib
import sys

import torch
from safetensors.torch import save_file
from torchtune import training
from torchtune.models import convert_weights
from torchtune.models.llama3_2 import llama3_2

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
INITIALIZER_RANGE = 0.02
# torchtune's llama3_2 builder: Llama 3's scaled RoPE with these fixed factors.
ROPE_SCALING = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192}


def hf_config(m: dict, dtype: str) -> dict:
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
            "vocab_size": m["vocab_size"], "hidden_size": m["embed_dim"], "intermediate_size": m["intermediate_dim"],
            "num_hidden_layers": m["num_layers"], "num_attention_heads": m["num_heads"],
            "num_key_value_heads": m["num_kv_heads"], "head_dim": m["embed_dim"] // m["num_heads"],
            "max_position_embeddings": m["max_seq_len"], "rms_norm_eps": m["norm_eps"], "rope_theta": m["rope_base"],
            "tie_word_embeddings": m["tie_word_embeddings"], "rope_scaling": ROPE_SCALING,
            "initializer_range": INITIALIZER_RANGE,
            "torch_dtype": {"fp32": "float32", "bf16": "bfloat16"}[dtype]}


def main() -> None:
    out, dtype, model = pathlib.Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
    torch.manual_seed(0)
    with training.set_default_dtype(DTYPES[dtype]):
        decoder = llama3_2(**model)
    with torch.no_grad():
        for weight in decoder.parameters():
            if weight.dim() == 2:
                weight.normal_(0.0, INITIALIZER_RANGE)
    state = convert_weights.tune_to_hf(decoder.state_dict(), num_heads=model["num_heads"],
                                       num_kv_heads=model["num_kv_heads"], dim=model["embed_dim"])
    out.mkdir(parents=True, exist_ok=True)
    # A tied model's output projection is its embedding: neither state dict holds it twice.
    save_file({k: v.contiguous() for k, v in state.items()}, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(hf_config(model, dtype), indent=1))


if __name__ == "__main__":
    main()
