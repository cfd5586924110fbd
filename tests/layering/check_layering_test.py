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
    "plugins/optim/a.h": "#pragma once\n",
    "plugins/optim/b.cpp": '#include "a.h"\n',
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


if __name__ == "__main__":
    unittest.main()
