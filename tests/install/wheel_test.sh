#!/usr/bin/env bash
# The wheel, end to end: `pip wheel .` makes fthost-<version>-py3-none-<platform>.whl, which
# installs into a fresh virtual environment together with the PyTorch and pyarrow wheels it
# requires (from PyPI, or pip's cache). From that environment only:
#   - the wheel carries no copy of LibTorch, Arrow or CUDA's libraries, and requires torch==X;
#   - `fthost --version` names the PyTorch it found; `fthost ls configs` lists the shipped configs;
#     validate reads the installed plugins' manifests instead of loading them;
#   - `fthost --config tiny_demo` trains the demo until the loss is below 0.1;
#   - the SDK found through `fthost.cmake_prefix_path` builds the out-of-tree plugins and model
#     family (tests/plugin_sdk/check_installed_sdk.sh), which the installed host trains the
#     family goldens with;
#   - beside another PyTorch, or none, every command refuses before loading anything, naming the
#     PyTorch it needs and the one it found.
#   bash tests/install/wheel_test.sh [BUILD_DIR]
# BUILD_DIR is the test build whose family goldens the SDK check trains (default build; ctest
# makes them: the fixture family_goldens). The wheel builds in build-wheel/ (pyproject.toml), its
# objects shared with BUILD_DIR's through ccache; FTHOST_CMAKE_ARGS passes on (CI: -Werror).
set -euo pipefail
cd "$(dirname "$0")/../.."
source_dir=$PWD
build_dir="${1:-build}"
python="${FTHOST_PYTHON:-$source_dir/.venv/bin/python}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "wheel test: $*" >&2; exit 1; }
step() { echo "wheel test: $* ($(( $(date +%s) - started )) s)"; }
started=$(date +%s)

# The build requirements (scikit-build-core, torch, pyarrow) are the project environment's. The
# compiler is the test build's: scikit-build-core would otherwise pick Python's (g++ for c++), and
# ccache, which hashes the compiler's name, would share nothing with BUILD_DIR.
compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:FILEPATH=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
[[ -n "$compiler" ]] && export CXX="$compiler"
cmake_args=$(echo "${FTHOST_CMAKE_ARGS:-}" | xargs | tr ' ' ';')
"$python" -m pip wheel . --no-build-isolation --no-deps --quiet -w "$work/dist" \
  ${cmake_args:+--config-settings=cmake.args="$cmake_args"} > "$work/wheel.log" 2>&1 \
  || { tail -n 60 "$work/wheel.log"; fail "pip wheel failed"; }
wheel=$(ls "$work"/dist/fthost-*.whl)
step "built $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"
[[ $(basename "$wheel") =~ ^fthost-[0-9.]+-py3-none-linux_x86_64\.whl$ ]] || fail "unexpected wheel name $(basename "$wheel")"
if unzip -l "$wheel" | grep -E "libtorch|libc10|libarrow|libparquet|libcudart|libnccl|/nvidia/" ; then
  fail "the wheel carries a copy of a library that belongs to the torch, pyarrow or nvidia wheels"
fi
torch_pin=$("$python" -c 'import torch; print(torch.__version__.split("+")[0])')
unzip -p "$wheel" 'fthost-*.dist-info/METADATA' > "$work/METADATA"
grep -qx "Requires-Dist: torch==$torch_pin" "$work/METADATA" || { cat "$work/METADATA"; fail "no torch==$torch_pin requirement"; }

python3 -m venv "$work/env"
"$work/env/bin/pip" install --quiet --progress-bar off "$wheel" > "$work/install.log" 2>&1 \
  || { tail -n 30 "$work/install.log"; fail "pip install of the wheel failed"; }
step "installed into a fresh environment with its requirements"
fthost="$work/env/bin/fthost"
site=$("$work/env/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
prefix=$("$work/env/bin/python" -c 'import fthost; print(fthost.cmake_prefix_path)')
[[ "$prefix" == "$site/fthost" ]] || fail "fthost.cmake_prefix_path is $prefix, expected $site/fthost"

"$fthost" --version > "$work/version.txt" 2>&1 || { cat "$work/version.txt"; fail "fthost --version failed"; }
grep -q "^fthost " "$work/version.txt" && grep -q "^PyTorch $torch_pin.* at $site/torch" "$work/version.txt" \
  || { cat "$work/version.txt"; fail "fthost --version names no fthost version or PyTorch"; }
"$fthost" ls configs > "$work/configs.txt" 2>&1 || { cat "$work/configs.txt"; fail "fthost ls configs failed"; }
grep -q "tiny_demo" "$work/configs.txt" || { cat "$work/configs.txt"; fail "the shipped configs are not listed"; }
demo_data="$prefix/share/fthost/configs/demo/sort_tokens.jsonl"
"$fthost" validate --config tiny_demo dataset.source="$demo_data" log_level=DEBUG > "$work/validate.log" 2>&1 \
  || { cat "$work/validate.log"; fail "validate failed"; }
if grep -q "loading the library" "$work/validate.log"; then
  cat "$work/validate.log"; fail "validate loaded a plugin library: the installed manifests are stale"
fi

(cd "$work" && "$fthost" --config tiny_demo dataset.source="$demo_data" output_dir="$work/demo" > "$work/demo.log" 2>&1) \
  || { tail -n 30 "$work/demo.log"; fail "the demo failed"; }
last_loss=$(grep -o "loss:[0-9.e-]*" "$work/demo.log" | tail -n 1 | cut -d: -f2)
"$python" -c "import sys; sys.exit(0 if float('$last_loss') < 0.1 else 1)" \
  || { tail -n 20 "$work/demo.log"; fail "the demo's last loss is $last_loss, not below 0.1"; }
[[ -f $(ls -d "$work"/demo/epoch_*/ | sort -V | tail -n 1)/model.safetensors ]] || fail "the demo wrote no checkpoint"
step "the installed fthost trained the demo to loss $last_loss"

bash tests/plugin_sdk/check_installed_sdk.sh "$prefix" "$fthost" "$source_dir" "$build_dir"
step "the installed SDK built the out-of-tree plugins"

# Another PyTorch: the version file the check reads, as another release would have it.
version_file="$site/torch/version.py"
cp "$version_file" "$work/version.py.orig"
sed -i "s/^__version__ = .*/__version__ = '2.12.1+cu130'/" "$version_file"
for command in "--version" "ls" "--config tiny_demo"; do
  if "$fthost" $command > "$work/mismatch.txt" 2>&1; then fail "fthost $command ran beside PyTorch 2.12.1"; fi
  grep -q "built against PyTorch $torch_pin.*has PyTorch 2.12.1+cu130" "$work/mismatch.txt" \
    || { cat "$work/mismatch.txt"; fail "fthost $command did not name both PyTorch versions"; }
done
cp "$work/version.py.orig" "$version_file"
mv "$site/torch" "$site/torch.away"
if "$fthost" ls > "$work/missing.txt" 2>&1; then fail "fthost ran without PyTorch"; fi
grep -q "has no torch" "$work/missing.txt" || { cat "$work/missing.txt"; fail "no message for a missing PyTorch"; }
mv "$site/torch.away" "$site/torch"
step "beside another PyTorch, or none, every command refused by name"
echo "wheel test: passed in $(( $(date +%s) - started )) s"
