#!/usr/bin/env bash
# Sets up, builds and runs the tiny demo training run, then asks the trained model to sort lists
# it never saw.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# fthost sets its thread pools itself (num_threads, OpenBLAS, OMP_WAIT_POLICY=PASSIVE unless set).
./build/bin/fthost --config configs/tiny_demo.toml "$@"

# What it learned: 20 held-out lists (configs/demo/sort_heldout.jsonl, none in the training
# data), answered greedily by the last epoch's checkpoint. The demo's vocabulary is token ids:
# 1 BOS, 3 SEP, the numbers 0..59 as ids 4..63, and the answer ends at EOS (id 2).
output_dir=output/tiny_demo
for arg in "$@"; do
  case "$arg" in output_dir=*) output_dir="${arg#output_dir=}" ;; esac
done
last_epoch=$(ls -d "$output_dir"/epoch_* 2>/dev/null | sort -V | tail -n 1 || true)
if [[ -z "$last_epoch" ]]; then
  echo "demo: no epoch_N checkpoint in $output_dir to generate with" >&2
  exit 0
fi
echo
echo "== $last_epoch sorts held-out lists (prompt: BOS, the list, SEP; answer: the list sorted) =="
./build/bin/fthost generate --checkpoint "$last_epoch" --prompts configs/demo/sort_heldout.jsonl \
  --stop-token 2 --max-new-tokens 20
echo
echo "== The same model before training (its seeded random initialisation) =="
./build/bin/fthost generate --config configs/tiny_demo.toml --prompts configs/demo/sort_heldout.jsonl \
  --stop-token 2 --max-new-tokens 20 "$@" 2>/dev/null | tail -n 1
# The demo: full finetuning of a tiny Llama-3-architecture model (random initialisation, ~0.9M
# parameters) on a bundled synthetic instruction task, sorting a list of distinct numbers
# (configs/demo/sort_tokens.jsonl, written by scripts/make_demo_data.py; prompt labels masked).
# About 35 s on 2 CPU cores; the loss falls from ~4.2 (uniform over 64 tokens) to about 0.01.
# Swap the logger with one override, no rebuild:
#   fthost --config configs/tiny_demo.toml \
#     metric_logger._component_=torchtune.training.metric_logging.TensorBoardLogger metric_logger.log_dir=output/tiny_demo/tb
# Several at once: a [[metric_logger]] list (docs/loggers.md).
