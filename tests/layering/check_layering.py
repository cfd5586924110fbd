#!/usr/bin/env python3
"""The host's layering, checked on its includes.

core/ is six rooms (core/README.md). A file may include its own room and the rooms below it:

    plugin_host  <-  config  <-  cli                         LibTorch-free: the fthost executable
                        ^
                        +-----  plan  <-  train  <-  generate  the training library

main.cpp and training_entry.cpp, at core/'s top, put the two programs together and may include
any room. Includes between rooms are spelled from core/ ("config/checked_config.h"), so every
include names its room; a bare "foo.h" must be a file of the same room.

Also checked:
  * the LibTorch-free rooms include no LibTorch header but c10's two value types (a dtype and a
    device in the settings); tests/unit/startup_test.cpp checks the executable's links;
  * the house's floors, sdk/ (its kernels included) below plugins/ and core/: no file under sdk/
    includes a header of plugins/ or core/, none under plugins/ a header of core/, and none under
    core/ a header of plugins/ (the host loads plugins at run time). An include counts as the
    other tree's when it resolves there, by a path or by an include directory that only that tree
    provides (any of its folders);
  * no CMake file under sdk/ names a path into plugins/ or core/ or a target defined there, none
    under plugins/ one of core/'s, and none under core/ one of plugins/';
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
    "plan": {"config", "plugin_host"},
    "train": {"plan", "config", "plugin_host"},
    "generate": {"train", "plan", "config", "plugin_host"},
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


# For each of the house's top-level trees: the trees whose headers it may include (itself first),
# the trees it may neither include nor link, and why.
FLOORS = {
    "sdk": (("sdk",), ("plugins", "core"), "sdk/ is below plugins/ and core/"),
    "plugins": (("plugins", "sdk"), ("core",), "plugins/ are below core/"),
    "core": (("core", "sdk"), ("plugins",), "core/ loads plugins at run time, never at build time"),
}
CMAKE_TARGET_DEFINITION = re.compile(
    r"^\s*(?:add_library|add_executable|add_custom_target|fthost_add_plugin)\s*\(\s*([A-Za-z0-9_.+:-]+)", re.M | re.I)
CMAKE_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.+-]*(?:::[A-Za-z0-9_.+-]+)*")
CMAKE_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')


def source_files(tree):
    return sorted(p for p in tree.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file())


def cmake_files(tree):
    return sorted(p for p in tree.rglob("*") if p.is_file() and (p.name == "CMakeLists.txt" or p.suffix == ".cmake"))


def folders(tree):
    """`tree` and every folder in it: where an include directory of that tree could point."""
    return [tree] + sorted(p for p in tree.rglob("*") if p.is_dir())


def resolve_include(path, quoted, name, roots):
    for base in ([path.parent] if quoted else []) + roots:
        target = base / name
        if target.is_file():
            return target.resolve()
    return None


def floor_of(src, target):
    """The top-level folder of the source tree that `target` lives in, or None."""
    try:
        return target.relative_to(src.resolve()).parts[0]
    except (ValueError, IndexError):
        return None


def check_floor_includes(src, floor, problems):
    """No file of `floor` includes a header of a tree it may not reach."""
    tree = src / floor
    if not tree.is_dir():
        return
    sees, reaches_not, why = FLOORS[floor]
    own_roots = [d for name in sees if (src / name).is_dir() for d in folders(src / name)]
    other_roots = [src] + [d for name in reaches_not if (src / name).is_dir() for d in folders(src / name)]
    for path in source_files(tree):
        rel = path.relative_to(src).as_posix()
        for line, quoted, name in includes_of(path):
            target = resolve_include(path, quoted, name, own_roots) or resolve_include(path, False, name, other_roots)
            other = floor_of(src, target) if target else None
            if other in reaches_not:
                spelled = f'"{name}"' if quoted else f"<{name}>"
                problems.append(f"{rel}:{line}: includes {spelled}, a header of {other}/ "
                                f"({target.relative_to(src.resolve()).as_posix()}); {why}")


def targets_defined_in(tree):
    names = set()
    for path in cmake_files(tree):
        for match in CMAKE_TARGET_DEFINITION.finditer(path.read_text(encoding="utf-8", errors="replace")):
            if "$" not in match.group(1):
                names.add(match.group(1))
    return names


def check_floor_cmake(src, floor, problems):
    """No CMake file of `floor` names a path into a tree it may not reach or a target defined there."""
    tree = src / floor
    if not tree.is_dir():
        return
    _, reaches_not, why = FLOORS[floor]
    targets = {name: other for other in reaches_not if (src / other).is_dir()
               for name in targets_defined_in(src / other)}
    path_into = re.compile(r"(?<![A-Za-z0-9_.-])(?:\.\./)*(" + "|".join(reaches_not) + r")/")
    for path in cmake_files(tree):
        rel = path.relative_to(src).as_posix()
        for number, text in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            code = re.sub(r"#.*", "", CMAKE_QUOTED.sub(lambda m: m.group(0).replace("#", ""), text))
            for match in path_into.finditer(code):
                problems.append(f"{rel}:{number}: names a path into {match.group(1)}/; {why}")
            for word in CMAKE_WORD.findall(CMAKE_QUOTED.sub('""', code)):
                if word in targets:
                    problems.append(f"{rel}:{number}: names {word}, a target of {targets[word]}/; {why}")


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
    for floor in FLOORS:
        check_floor_includes(src, floor, problems)
        check_floor_cmake(src, floor, problems)
    sdk_include_dirs = [src / "sdk" / "include", src / "sdk" / "src"] + sorted((src / "sdk").glob("kernels/*/include"))
    check_cycles("sdk/", src / "sdk", sdk_include_dirs, problems)
    plugins = src / "plugins"
    if plugins.is_dir():
        for plugin in sorted(p for p in plugins.iterdir() if p.is_dir()):
            check_cycles(f"plugins/{plugin.name}/", plugin, [plugin], problems)
    for problem in problems:
        print(problem)
    if problems:
        print(f"layering: {len(problems)} problem(s)")
        return 1
    print("layering: core/'s rooms include only downwards; sdk/ includes and links nothing of plugins/ or core/, "
          "plugins/ and core/ nothing of each other; no include cycle in core/, sdk/ or plugins/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
