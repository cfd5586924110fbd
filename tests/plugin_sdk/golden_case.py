"""A generated family golden case (tests/golden/README.md) as an fthost run of the acme Qwen 3 model,
and the run's result against the case's trajectory and final weights.

  golden_case.py config GOLDEN_DIR CASE OUT_DIR   print the run configuration (TOML)
  golden_case.py check GOLDEN_DIR CASE OUT_DIR    compare OUT_DIR's metrics and epoch_0 weights
  golden_case.py config-json FIXTURE_DIR SAVED_DIR
                                                  the model's own config.json (SAVED_DIR, from a run
                                                  without a source checkpoint) against the fixture's

Tolerances ($FT_FIXTURES/README.md): loss, lr and grad_norm within 2e-4 relative, num_tokens
exact, each tensor's sum of squares within 1e-4 relative and its first four values within 1e-4.
"""
import json
import os
import sys

import numpy as np
from safetensors.numpy import load_file


def case_of(golden_dir, case):
    with open(os.path.join(golden_dir, "cases.json")) as f:
        return json.load(f)[case]


def run_config(golden_dir, case, out_dir):
    c = case_of(golden_dir, case)
    h = c["hyperparameters"]
    fixture = os.path.join(golden_dir, c["fixture"])
    lines = [
        f'output_dir = "{out_dir}"',
        "seed = 0",
        "epochs = 1",
        f"max_steps_per_epoch = {h['steps']}",
        f"batch_size = {h['batch_size']}",
        f"gradient_accumulation_steps = {h.get('grad_accum', '1')}",
        "clip_grad_norm = " + h.get("clip_grad_norm", '"inf"'),
        f"shuffle = {'true' if h.get('shuffle') else 'false'}",
        'dtype = "fp32"',
        "num_threads = 1",
        "",
        "[model]",
        '_component_ = "acme.models.qwen3"',
        f'path = "{fixture}"',
        "",
        "[checkpointer]",
        '_component_ = "torchtune.training.FullModelHFCheckpointer"',
        f'checkpoint_dir = "{fixture}"',
        'checkpoint_files = ["model.safetensors"]',
        'model_type = "QWEN3"',
        f'output_dir = "{out_dir}"',
        "",
        "[dataset]",
        '_component_ = "fthost.datasets.tokenized_jsonl"',
        f'source = "{fixture}/data.jsonl"',
        "",
        "[loss]",
        '_component_ = "torchtune.modules.loss.CEWithChunkedOutputLoss"',
        "",
        "[optimizer]",
        '_component_ = "torch.optim.AdamW"',
        f"lr = {h['lr']}",
        "betas = [0.9, 0.999]",
        "eps = 1e-8",
        f"weight_decay = {h.get('weight_decay', '0.01')}",
        "",
    ]
    if "warmup" in h:
        lines += [
            "[lr_scheduler]",
            '_component_ = "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup"',
            f"num_warmup_steps = {h['warmup']}",
            "num_cycles = 0.5",
            "",
        ]
    lines += [
        "[metric_logger]",
        '_component_ = "torchtune.training.metric_logging.DiskLogger"',
        f'log_dir = "{out_dir}/logs"',
        'filename = "metrics.jsonl"',
        'output_fmt = "jsonl"',
    ]
    print("\n".join(lines))


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def saved_tensors(model_dir):
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if not os.path.exists(index):
        return load_file(os.path.join(model_dir, "model.safetensors"))
    with open(index) as f:
        files = sorted(set(json.load(f)["weight_map"].values()))
    tensors = {}
    for name in files:
        tensors.update(load_file(os.path.join(model_dir, name)))
    return tensors


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-12)


def check(golden_dir, case, out_dir):
    files = case_of(golden_dir, case)["files"]
    expected = read_jsonl(os.path.join(golden_dir, files["expected"]))
    logged = read_jsonl(os.path.join(out_dir, "logs", "metrics.jsonl"))
    problems = []
    if len(logged) != len(expected):
        problems.append(f"{len(logged)} logged steps, {len(expected)} expected")
    worst = {"loss": 0.0, "lr": 0.0, "grad_norm": 0.0, "sumsq": 0.0}
    for e, got in zip(expected, logged):
        if got["step"] != e["step"] or got["num_tokens"] != e["num_tokens"]:
            problems.append(f"step {e['step']}: step/num_tokens {got['step']}/{got['num_tokens']}, "
                            f"expected {e['step']}/{e['num_tokens']}")
        for key, tolerance in (("loss", 2e-4), ("lr", 2e-4), ("grad_norm", 2e-4)):
            d = rel(got[key], e[key])
            worst[key] = max(worst[key], d)
            if d >= tolerance:
                problems.append(f"step {e['step']}: {key} {got[key]} vs {e[key]} ({d:.2e} relative)")

    with open(os.path.join(golden_dir, files["final_weights"])) as f:
        final_weights = json.load(f)
    saved = saved_tensors(os.path.join(out_dir, "epoch_0"))
    for name, stats in final_weights.items():
        if name not in saved:
            problems.append(f"{name}: missing from the saved checkpoint")
            continue
        values = saved[name].astype(np.float64)
        d = rel(float(np.sum(values * values)), stats["sumsq"])
        worst["sumsq"] = max(worst["sumsq"], d)
        if d >= 1e-4:
            problems.append(f"{name}: sum of squares {d:.2e} relative from the golden's")
        first4 = values.reshape(-1)[:4]
        if np.max(np.abs(first4 - np.array(stats["first4"]))) >= 1e-4:
            problems.append(f"{name}: first values {first4.tolist()} vs {stats['first4']}")
    extra = sorted(set(saved) - set(final_weights))
    if extra:
        problems.append(f"saved tensors the golden has not: {extra}")

    summary = ", ".join(f"{k} {v:.1e}" for k, v in worst.items())
    print(f"{case}: {len(logged)} steps, {len(saved)} tensors; max relative differences: {summary}")
    for p in problems:
        print("  " + p)
    return not problems


def check_config_json(fixture_dir, saved_dir):
    with open(os.path.join(fixture_dir, "config.json")) as f:
        fixture = json.load(f)
    with open(os.path.join(saved_dir, "config.json")) as f:
        saved = json.load(f)
    differing = [k for k, v in saved.items() if k != "torch_dtype" and fixture.get(k, v) != v]
    missing = [k for k in ("architectures", "model_type", "head_dim", "rms_norm_eps", "rope_theta",
                           "tie_word_embeddings", "max_position_embeddings") if k not in saved]
    for k in differing:
        print(f"config.json: {k} = {saved[k]!r}, the fixture's {fixture.get(k)!r}")
    for k in missing:
        print(f"config.json: {k} missing")
    if not differing and not missing:
        print(f"config.json: the model's {len(saved)} keys agree with the fixture's")
    return not differing and not missing


def main():
    command, *args = sys.argv[1:]
    if command == "config":
        run_config(*args)
        return 0
    if command == "check":
        return 0 if check(*args) else 1
    if command == "config-json":
        return 0 if check_config_json(*args) else 1
    raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    sys.exit(main())
