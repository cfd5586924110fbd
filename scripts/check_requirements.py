#!/usr/bin/env python3
"""Exits 0 when every `name==version` pin in a requirements file is installed at that version.

  python scripts/check_requirements.py REQUIREMENTS [--verbose]

scripts/setup.sh runs it with the virtual environment's interpreter, so pip is asked only when
something is missing or at another version.
"""
import importlib.metadata
import sys


def main() -> int:
    path, verbose = sys.argv[1], "--verbose" in sys.argv[2:]
    wrong = []
    for line in open(path, encoding="utf-8"):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, pinned = line.partition("==")
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        if installed is None or installed.split("+")[0] != pinned:
            wrong.append(f"{name}: pinned {pinned}, installed {installed or 'none'}")
        elif verbose:
            print(f"setup: {name} {installed}")
    for problem in wrong:
        print(f"setup: {problem}", file=sys.stderr if verbose else sys.stdout)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
