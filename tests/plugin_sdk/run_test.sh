#!/usr/bin/env bash
# Installs fthost, builds the acme plugin against the installed SDK only, loads it with the
# installed fthost and trains the demo with it as the metric logger.
set -euo pipefail
build_dir="$1"; source_dir="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" > "$work/install.log"
cmake -S "$source_dir/tests/plugin_sdk" -B "$work/acme" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/acme" > "$work/build.log"
fthost="$work/prefix/bin/fthost"
# fthost_add_plugin wrote the manifest with the installed host; the installed plugins' manifests
# stayed current through the install, so validate loads no library (it says so at debug level).
[[ -f "$work/acme/plugins/libacme_csv_logger.so.manifest.json" ]] || { echo "no manifest for the acme plugin"; exit 1; }
"$fthost" validate --plugin-dir "$work/acme/plugins" --config "$source_dir/configs/tiny_demo.toml" log_level=DEBUG \
  > "$work/validate.log" 2>&1 || { cat "$work/validate.log"; exit 1; }
if grep -q "loading the library" "$work/validate.log"; then
  echo "validate loaded a plugin library instead of reading its manifest:"; cat "$work/validate.log"; exit 1
fi
"$fthost" ls metric_logger --plugin-dir "$work/acme/plugins" | grep -q "acme.loggers.CsvLogger"
"$fthost" --plugin-dir "$work/acme/plugins" --config "$source_dir/configs/tiny_demo.toml" \
  output_dir="$work/run" epochs=2 max_steps_per_epoch=10 log_every_n_steps=5 \
  dataset.source="$source_dir/configs/demo/sort_tokens.jsonl" \
  'metric_logger._component_="acme.loggers.CsvLogger"' \
  metric_logger.path="$work/metrics.csv" > "$work/run.log" 2>&1 || { cat "$work/run.log"; exit 1; }
head -1 "$work/metrics.csv" | grep -q "^step,loss,lr,tokens_per_second_per_gpu"
rows=$(($(wc -l < "$work/metrics.csv") - 1))
[[ $rows -eq 4 ]] || { echo "expected 4 metric rows, got $rows"; cat "$work/metrics.csv"; exit 1; }
echo "out-of-tree plugin: built against the installed SDK, loaded, logged $rows rows"
