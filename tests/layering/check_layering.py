#!/usr/bin/env python3
"""The host's layering, checked on its includes.

core/ is five rooms (core/README.md). A file may include its own room and the rooms below it:

    plugin_host  <-  config  <-  cli                 LibTorch-free: the fthost executable
                        ^
                        +-----  train  <-  generate  the training library

main.cpp and training_entry.cpp, at core/'s top, put the two programs together and may include
any room. Includes between rooms are spelled from core/ ("config/checked_config.h"), so every
include names its room; a bare "foo.h" must be a file of the same room.

Also checked:
  * the LibTorch-free rooms include no LibTorch header but c10's two value types (a dtype and a
    device in the settings); tests/unit/startup_test.cpp checks the executable's links;
  * no include cycle between modules (foo.h + foo.cpp), in core/, sdk/ or any plugin.

Exit status 1 with one line per problem; 0 prints a one-line summary.
"""
import argparse
import pathlib
import re
import sys

ROOMS_BELOW = {
    "plugin_host": set(),
    "config": {"plugin_host"},
    "cli": {"config", "plugin_host"},
    "train": {"config", "plugin_host"},
    "generate": {"train", "config", "plugin_host"},
}
LIBTORCH_FREE = {"plugin_host", "config", "cli"}
LIBTORCH_PREFIXES = ("torch/", "ATen/", "c10/", "caffe2/")
LIBTORCH_VALUE_TYPES = {"c10/core/ScalarType.h", "c10/core/Device.h"}
ROOT_FILES = {"main.cpp", "training_entry.cpp"}
SOURCE_SUFFIXES = {".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh"}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def includes_of(path):
    text = path.read_text(encoding="utf-8", errors="replace")
    for match in INCLUDE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        yield line, match.group(1) == '"', match.group(2)


def check_core(core, problems):
    if not core.is_dir():
        problems.append(f"{core}: no such directory")
        return
    for path in sorted(core.rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
            continue
        rel = path.relative_to(core)
        if len(rel.parts) == 1:
            if rel.name not in ROOT_FILES:
                problems.append(f"core/{rel}: a file outside the rooms; move it into one of {sorted(ROOMS_BELOW)}")
            continue
        room = rel.parts[0]
        if room not in ROOMS_BELOW:
            problems.append(f"core/{rel}: {room}/ is not a room of core/ ({sorted(ROOMS_BELOW)}); "
                            "add it to tests/layering/check_layering.py and core/README.md")
            continue
        for line, quoted, name in includes_of(path):
            where = f"core/{rel}:{line}"
            if room in LIBTORCH_FREE and name.startswith(LIBTORCH_PREFIXES) and name not in LIBTORCH_VALUE_TYPES:
                problems.append(f"{where}: includes <{name}>, but {room}/ is LibTorch-free (the fthost executable)")
            if not quoted:
                continue
            first = name.split("/")[0]
            if first in ROOMS_BELOW:
                if not (core / name).is_file():
                    problems.append(f'{where}: includes "{name}", which is not a file of core/')
                elif first != room and first not in ROOMS_BELOW[room]:
                    problems.append(f'{where}: {room}/ includes "{name}", from {first}/, which is not below it '
                                    f"(below {room}/: {', '.join(sorted(ROOMS_BELOW[room])) or 'nothing'})")
            elif "/" not in name and (core / name).is_file():
                problems.append(f'{where}: includes "{name}" from core/\'s top; only main.cpp and '
                                "training_entry.cpp live there, and nothing includes them")
            elif "/" not in name and not (path.parent / name).is_file() and _is_core_header(core, name):
                problems.append(f'{where}: includes "{name}" without its room; spell it "{_room_of(core, name)}/{name}"')


def _is_core_header(core, name):
    return any((core / room / name).is_file() for room in ROOMS_BELOW)


def _room_of(core, name):
    return next(room for room in ROOMS_BELOW if (core / room / name).is_file())


def module_graph(tree, include_dirs):
    """Modules (path without suffix, relative to `tree`) and the modules each one includes."""
    files = [p for p in tree.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file()]
    modules = {p.with_suffix("").relative_to(tree).as_posix() for p in files}
    graph = {m: set() for m in modules}
    for path in files:
        me = path.with_suffix("").relative_to(tree).as_posix()
        for _, quoted, name in includes_of(path):
            for base in [path.parent] + include_dirs:
                target = base / name
                if target.is_file():
                    try:
                        other = target.resolve().with_suffix("").relative_to(tree.resolve()).as_posix()
                    except ValueError:
                        break  # outside this tree: not part of its cycles
                    if other != me and other in graph:
                        graph[me].add(other)
                    break
    return graph


def find_cycle(graph):
    """One include cycle as a list of modules, or None."""
    state = {}
    stack = []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def check_cycles(label, tree, include_dirs, problems):
    if not tree.is_dir():
        return
    cycle = find_cycle(module_graph(tree, include_dirs))
    if cycle:
        problems.append(f"{label}: include cycle: {' -> '.join(cycle)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source-dir", default=pathlib.Path(__file__).resolve().parents[2], type=pathlib.Path)
    args = parser.parse_args()
    src = args.source_dir
    problems = []
    check_core(src / "core", problems)
    check_cycles("core/", src / "core", [src / "core"], problems)
    check_cycles("sdk/", src / "sdk", [src / "sdk" / "include", src / "sdk" / "src"], problems)
    plugins = src / "plugins"
    if plugins.is_dir():
        for plugin in sorted(p for p in plugins.iterdir() if p.is_dir()):
            check_cycles(f"plugins/{plugin.name}/", plugin, [plugin], problems)
    for problem in problems:
        print(problem)
    if problems:
        print(f"layering: {len(problems)} problem(s)")
        return 1
    print("layering: core/'s rooms include only downwards; no include cycle in core/, sdk/ or plugins/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
