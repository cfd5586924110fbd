#!/usr/bin/env python3
"""check_layering.py fails on each kind of problem it exists for, and passes a clean tree."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

CHECKER = pathlib.Path(__file__).with_name("check_layering.py")


def make_tree(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


CLEAN = {
    "core/plugin_host/plugin_loader.h": "#pragma once\n",
    "core/config/checked_config.h": '#pragma once\n#include "plugin_host/plugin_loader.h"\n',
    "core/config/checked_config.cpp": '#include "config/checked_config.h"\n#include <c10/core/ScalarType.h>\n',
    "core/cli/commands.cpp": '#include "config/checked_config.h"\n',
    "core/train/recipe.h": '#pragma once\n#include "config/checked_config.h"\n#include <torch/types.h>\n',
    "core/generate/generate.cpp": '#include "train/recipe.h"\n',
    "core/main.cpp": '#include "cli/commands.cpp"\n',
    "core/CMakeLists.txt": "add_library(fthost_core STATIC main.cpp)\nadd_executable(fthost main.cpp)\n",
    "sdk/include/ft/errors.h": "#pragma once\n",
    "sdk/src/errors.cpp": "#include <ft/errors.h>\n",
    "sdk/kernels/cpu/include/ft_kernels/fused_ops.h": "#pragma once\n#include <ft/errors.h>\n",
    "sdk/kernels/cpu/fused_ops.cpp": '#include <ft_kernels/fused_ops.h>\n#include "fused_op_support.h"\n',
    "sdk/kernels/cpu/fused_op_support.h": "#pragma once\n",
    "sdk/src/nn/rms_norm.cpp": "#include <ft_kernels/fused_ops.h>\n#include <torch/types.h>\n",
    "sdk/CMakeLists.txt": "add_library(ftsdk SHARED src/errors.cpp)\nadd_subdirectory(kernels/cpu)\n"
                          "add_library(ftsdk_nn SHARED src/nn/rms_norm.cpp)\n"
                          "target_link_libraries(ftsdk_nn PRIVATE ft_cpu_kernels)\n",
    # A comment may name the floors above; only the code is checked.
    "sdk/kernels/cpu/CMakeLists.txt": "# compiled into ftsdk_nn and plugins/losses (ft_losses)\n"
                                      "add_library(ft_cpu_kernels STATIC fused_ops.cpp)\n"
                                      "target_link_libraries(ft_cpu_kernels PUBLIC ftsdk torch)\n",
    "plugins/CMakeLists.txt": "add_subdirectory(optim)\nadd_subdirectory(losses)\n",
    "plugins/optim/CMakeLists.txt": "fthost_add_plugin(ft_optim SOURCES b.cpp LINK ft_cpu_kernels)\n",
    "plugins/optim/a.h": "#pragma once\n",
    "plugins/optim/b.cpp": '#include "a.h"\n#include <ft/errors.h>\n#include <ft_kernels/fused_ops.h>\n',
    "plugins/losses/CMakeLists.txt": "fthost_add_plugin(ft_losses SOURCES losses.cpp)\n",
    "plugins/losses/include/ft_losses/losses.h": "#pragma once\n",
}


class CheckLayering(unittest.TestCase):
    def run_on(self, changes):
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            files = dict(CLEAN)
            files.update(changes)
            make_tree(root, files)
            result = subprocess.run([sys.executable, str(CHECKER), "--source-dir", str(root)],
                                    capture_output=True, text=True)
            return result.returncode, result.stdout

    def test_clean_tree_passes(self):
        code, out = self.run_on({})
        self.assertEqual(code, 0, out)

    def test_include_from_a_higher_room_fails(self):
        code, out = self.run_on({"core/config/checked_config.cpp": '#include "cli/commands.h"\n',
                                 "core/cli/commands.h": "#pragma once\n"})
        self.assertEqual(code, 1)
        self.assertIn('core/config/checked_config.cpp:1: config/ includes "cli/commands.h", from cli/', out)

    def test_sibling_rooms_do_not_include_each_other(self):
        code, out = self.run_on({"core/train/recipe.cpp": '#include "cli/commands.h"\n',
                                 "core/cli/commands.h": "#pragma once\n"})
        self.assertEqual(code, 1)
        self.assertIn("train/ includes", out)

    def test_libtorch_in_a_libtorch_free_room_fails(self):
        code, out = self.run_on({"core/cli/commands.cpp": "#include <ATen/core/Tensor.h>\n"})
        self.assertEqual(code, 1)
        self.assertIn("cli/ is LibTorch-free", out)

    def test_bare_include_of_another_rooms_header_fails(self):
        code, out = self.run_on({"core/cli/commands.cpp": '#include "checked_config.h"\n'})
        self.assertEqual(code, 1)
        self.assertIn('spell it "config/checked_config.h"', out)

    def test_include_cycle_fails(self):
        code, out = self.run_on({"plugins/optim/a.h": '#pragma once\n#include "b.h"\n',
                                 "plugins/optim/b.h": "#pragma once\n"})
        self.assertEqual(code, 1)
        self.assertIn("plugins/optim/: include cycle: a -> b -> a", out)

    def test_file_outside_the_rooms_fails(self):
        code, out = self.run_on({"core/stray.cpp": ""})
        self.assertEqual(code, 1)
        self.assertIn("core/stray.cpp: a file outside the rooms", out)

    def test_unknown_room_fails(self):
        code, out = self.run_on({"core/extra/thing.cpp": ""})
        self.assertEqual(code, 1)
        self.assertIn("extra/ is not a room of core/", out)

    def test_sdk_including_a_header_only_plugins_provide_fails(self):
        code, out = self.run_on({"sdk/src/nn/rms_norm.cpp": "#include <ft_losses/losses.h>\n"})
        self.assertEqual(code, 1)
        self.assertIn("sdk/src/nn/rms_norm.cpp:1: includes <ft_losses/losses.h>, a header of plugins/ "
                      "(plugins/losses/include/ft_losses/losses.h)", out)

    def test_sdk_including_core_by_path_fails(self):
        code, out = self.run_on({"sdk/src/errors.cpp": '#include "../../core/config/checked_config.h"\n'})
        self.assertEqual(code, 1)
        self.assertIn('sdk/src/errors.cpp:1: includes "../../core/config/checked_config.h", a header of core/', out)

    def test_sdk_kernels_including_a_core_room_fails(self):
        code, out = self.run_on({"sdk/kernels/cpu/fused_ops.cpp": '#include "train/recipe.h"\n'})
        self.assertEqual(code, 1)
        self.assertIn('sdk/kernels/cpu/fused_ops.cpp:1: includes "train/recipe.h", a header of core/', out)

    def test_sdk_cmake_naming_a_path_above_fails(self):
        for text, floor in (("add_subdirectory(../plugins/losses losses)\n", "plugins/"),
                            ('target_include_directories(ftsdk PRIVATE "${PROJECT_SOURCE_DIR}/core/config")\n',
                             "core/")):
            with self.subTest(floor=floor):
                code, out = self.run_on({"sdk/kernels/cpu/CMakeLists.txt": text})
                self.assertEqual(code, 1)
                self.assertIn(f"sdk/kernels/cpu/CMakeLists.txt:1: names a path into {floor}", out)

    def test_sdk_cmake_linking_a_target_above_fails(self):
        for target, floor in (("ft_losses", "plugins/"), ("fthost_core", "core/")):
            with self.subTest(target=target):
                code, out = self.run_on({"sdk/CMakeLists.txt": f"target_link_libraries(ftsdk_nn PRIVATE {target})\n"})
                self.assertEqual(code, 1)
                self.assertIn(f"sdk/CMakeLists.txt:1: names {target}, a target of {floor}", out)

    def test_plugin_including_core_fails(self):
        code, out = self.run_on({"plugins/optim/b.cpp": '#include "config/checked_config.h"\n'})
        self.assertEqual(code, 1)
        self.assertIn('plugins/optim/b.cpp:1: includes "config/checked_config.h", a header of core/ '
                      "(core/config/checked_config.h)", out)

    def test_plugin_cmake_linking_core_fails(self):
        code, out = self.run_on(
            {"plugins/optim/CMakeLists.txt": "fthost_add_plugin(ft_optim SOURCES b.cpp LINK fthost_core)\n"})
        self.assertEqual(code, 1)
        self.assertIn("plugins/optim/CMakeLists.txt:1: names fthost_core, a target of core/", out)

    def test_core_including_a_plugin_header_fails(self):
        code, out = self.run_on({"core/train/recipe.cpp": "#include <ft_losses/losses.h>\n"})
        self.assertEqual(code, 1)
        self.assertIn("core/train/recipe.cpp:1: includes <ft_losses/losses.h>, a header of plugins/", out)

    def test_core_cmake_linking_a_plugin_fails(self):
        code, out = self.run_on({"core/CMakeLists.txt": "add_library(fthost_core STATIC main.cpp)\n"
                                                        "target_link_libraries(fthost_core PRIVATE ft_losses)\n"})
        self.assertEqual(code, 1)
        self.assertIn("core/CMakeLists.txt:2: names ft_losses, a target of plugins/", out)


if __name__ == "__main__":
    unittest.main()
