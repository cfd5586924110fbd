#!/usr/bin/env bash
# Installs fthost with `cmake --install` and checks the installed SDK and host with
# check_installed_sdk.sh (tests/install/wheel_test.sh does the same for the wheel's).
set -euo pipefail
build_dir="$1"; source_dir="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" > "$work/install.log"
bash "$source_dir/tests/plugin_sdk/check_installed_sdk.sh" "$work/prefix" "$work/prefix/bin/fthost" "$source_dir" "$build_dir"
