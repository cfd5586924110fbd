#!/usr/bin/env bash
# Builds the acme plugins against an installed SDK only and loads them with the installed fthost:
# trains the demo with the CSV metric logger, and trains the Qwen 3 family goldens (the ctest
# fixture family_goldens makes them in BUILD/family_goldens) with the acme Qwen 3 model, checked
# against their trajectories and final weights by golden_case.py.
#   check_installed_sdk.sh PREFIX FTHOST SOURCE_DIR BUILD_DIR
# PREFIX is the install prefix (find_package(fthost) finds it through CMAKE_PREFIX_PATH), FTHOST
# the command that runs the installed host (PREFIX/bin/fthost, or the wheel's console script).
set -euo pipefail
prefix="$1"; fthost="$2"; source_dir="$3"; build_dir="$4"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake -S "$source_dir/tests/plugin_sdk" -B "$work/acme" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/acme" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
# fthost_add_plugin wrote the manifest with the installed host; the installed plugins' manifests
# stayed current through the install, so validate loads no library (it says so at debug level).
[[ -f "$work/acme/plugins/libacme_csv_logger.so.manifest.json" ]] || { echo "no manifest for the acme plugin"; exit 1; }
"$fthost" validate --plugin-dir "$work/acme/plugins" --config "$source_dir/configs/tiny_demo.toml" log_level=DEBUG \
  > "$work/validate.log" 2>&1 || { cat "$work/validate.log"; exit 1; }
if grep -q "loading the library" "$work/validate.log"; then
  echo "validate loaded a plugin library instead of reading its manifest:"; cat "$work/validate.log"; exit 1
fi
"$fthost" ls metric_logger --plugin-dir "$work/acme/plugins" | grep "acme.loggers.CsvLogger" > /dev/null
"$fthost" --plugin-dir "$work/acme/plugins" --config "$source_dir/configs/tiny_demo.toml" \
  output_dir="$work/run" epochs=2 max_steps_per_epoch=10 log_every_n_steps=5 \
  dataset.source="$source_dir/configs/demo/sort_tokens.jsonl" \
  'metric_logger._component_="acme.loggers.CsvLogger"' \
  metric_logger.path="$work/metrics.csv" > "$work/run.log" 2>&1 || { cat "$work/run.log"; exit 1; }
head -1 "$work/metrics.csv" | grep -q "^step,loss,lr,tokens_per_second_per_gpu"
rows=$(($(wc -l < "$work/metrics.csv") - 1))
[[ $rows -eq 4 ]] || { echo "expected 4 metric rows, got $rows"; cat "$work/metrics.csv"; exit 1; }
echo "out-of-tree plugin: built against the installed SDK, loaded, logged $rows rows"

# The model family: acme.models.qwen3 trains each Qwen 3 golden case to the golden numbers.
goldens="$build_dir/family_goldens"
[[ -f "$goldens/.complete" ]] || { echo "$goldens holds no complete family goldens (ctest fixture family_goldens)"; exit 1; }
python=$(sed -n 's/^FTHOST_PYTHON:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
[[ -x "$python" ]] || python="$source_dir/.venv/bin/python"
check="$source_dir/tests/plugin_sdk/golden_case.py"
# grep reads the whole listing: with -q it would stop at the match, and fthost, still writing,
# would fail on the closed pipe.
"$fthost" ls model --plugin-dir "$work/acme/plugins" | grep "acme.models.qwen3" > /dev/null
for case in qwen3_tied_ga2_clip qwen3_untied; do
  "$python" "$check" config "$goldens" "$case" "$work/$case" > "$work/$case.toml"
  "$fthost" --plugin-dir "$work/acme/plugins" --config "$work/$case.toml" > "$work/$case.log" 2>&1 \
    || { cat "$work/$case.log"; exit 1; }
  "$python" "$check" check "$goldens" "$case" "$work/$case" || { cat "$work/$case.log"; exit 1; }
done
# Without a source checkpoint the saved config.json is the model's own (hf_config_json()).
fixture="$goldens/fixtures/qwen3_tied"
"$fthost" --plugin-dir "$work/acme/plugins" --config "$work/qwen3_tied_ga2_clip.toml" \
  output_dir="$work/scratch" checkpointer.output_dir="$work/scratch" metric_logger.log_dir="$work/scratch/logs" \
  checkpointer.checkpoint_dir='""' checkpointer.checkpoint_files='[]' max_steps_per_epoch=1 \
  > "$work/scratch.log" 2>&1 || { cat "$work/scratch.log"; exit 1; }
"$python" "$check" config-json "$fixture" "$work/scratch/epoch_0"
echo "out-of-tree model family: acme.models.qwen3 trained both Qwen 3 golden cases to the golden numbers"
