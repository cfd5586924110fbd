#!/usr/bin/env python3
"""Reference trajectories of bitsandbytes' Adam family on the CPU (its own CPU backend), for
tests/unit/plugins/bitsandbytes_optimizers_test.cpp: each optimizer steps three parameters (two
large enough for 8-bit moments, one below min_8bit_size: 32-bit) through STEPS steps of fixed
pseudo-random gradients, and after each step the parameters and every state tensor are written.

  .venv/bin/python tests/optimizer_references/make_bitsandbytes_reference.py OUT_DIR

Writes OUT_DIR/<optimizer>.safetensors (tensors "initial.<i>", "grad.<step>.<i>",
"param.<step>.<i>", "state.<step>.<i>.<field>") and OUT_DIR/versions.json.
"""
import json
import pathlib
import sys

import torch
import bitsandbytes as bnb
from safetensors.torch import save_file

STEPS = 6
SHAPES = [(80, 64), (300, 41), (33, 33)]  # 5120 and 12300 values (8-bit; the second ends in a short block), 1089 (32-bit)
CASES = {
    "AdamW8bit": (bnb.optim.AdamW8bit, dict(lr=1e-2, weight_decay=0.1)),
    "Adam8bit": (bnb.optim.Adam8bit, dict(lr=3e-3, betas=(0.8, 0.99))),
    "PagedAdamW8bit": (bnb.optim.PagedAdamW8bit, dict(lr=1e-2)),
    "PagedAdamW": (bnb.optim.PagedAdamW, dict(lr=1e-2, weight_decay=0.05)),
}


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, (cls, kwargs) in CASES.items():
        gen = torch.Generator().manual_seed(1234)
        params = [torch.nn.Parameter(torch.randn(s, generator=gen)) for s in SHAPES]
        tensors = {f"initial.{i}": p.detach().clone() for i, p in enumerate(params)}
        opt = cls(params, **kwargs)
        for step in range(1, STEPS + 1):
            for i, p in enumerate(params):
                # Gradients of varied scale, so blocks' absmax differ and small values occur.
                g = torch.randn(p.shape, generator=gen) * (0.1 + i) * torch.rand(p.shape, generator=gen)
                p.grad = g
                tensors[f"grad.{step}.{i}"] = g.clone()
            opt.step()
            for i, p in enumerate(params):
                tensors[f"param.{step}.{i}"] = p.detach().clone()
                for field, value in opt.state[p].items():
                    if torch.is_tensor(value):
                        tensors[f"state.{step}.{i}.{field}"] = value.detach().clone().contiguous()
                    else:
                        tensors[f"state.{step}.{i}.{field}"] = torch.tensor(value, dtype=torch.int64)
        save_file(tensors, str(out / f"{name}.safetensors"))
    (out / "versions.json").write_text(json.dumps({"bitsandbytes": bnb.__version__, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
