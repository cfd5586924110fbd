#!/usr/bin/env python3
"""Prints the tests that failed in a build directory's last ctest run, each with the end of its
output, so that the end of a long CI log says what failed and why.

    python3 scripts/failed_tests.py BUILD_DIR [--lines N]

Reads BUILD_DIR/Testing/Temporary/LastTestsFailed.log (the names) and LastTest.log (the output
ctest recorded). Prints nothing when no test failed."""
import argparse
import os
import re
import sys


FIRST_FAILURE = re.compile(r"Failure$|: error|ERROR: |Sanitizer|runtime error|terminate called|Segmentation")


def outputs_by_test(log_text):
    """Maps each test name to the output ctest recorded for it."""
    outputs = {}
    headers = list(re.finditer(r"^\d+/\d+ Testing: (.*)$", log_text, flags=re.M))
    for i, header in enumerate(headers):
        block = log_text[header.end(): headers[i + 1].start() if i + 1 < len(headers) else len(log_text)]
        parts = re.split(r"^Output:\n-+\n", block, maxsplit=1, flags=re.M)
        text = parts[1] if len(parts) == 2 else block
        outputs[header.group(1).strip()] = text.split("<end of output>", 1)[0]
    return outputs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir")
    parser.add_argument("--lines", type=int, default=40, help="lines of each failed test's output (default 40)")
    parser.add_argument("--outputs", type=int, default=5, help="failed tests whose output is shown (default 5)")
    args = parser.parse_args()
    temporary = os.path.join(args.build_dir, "Testing", "Temporary")
    failed_path = os.path.join(temporary, "LastTestsFailed.log")
    if not os.path.isfile(failed_path):
        return 0
    with open(failed_path, encoding="utf-8", errors="replace") as f:
        failed = [line.split(":", 1)[1].strip() for line in f if ":" in line]
    if not failed:
        return 0
    outputs = {}
    log_path = os.path.join(temporary, "LastTest.log")
    if os.path.isfile(log_path):
        with open(log_path, encoding="utf-8", errors="replace") as f:
            outputs = outputs_by_test(f.read())
    print(f"{len(failed)} test(s) failed in {args.build_dir}:")
    for name in failed:
        print(f"  {name}")
    for name in failed[: args.outputs]:
        lines = outputs.get(name, "(no output recorded)\n").rstrip("\n").split("\n")
        # From the first failure report (gtest's, a sanitizer's, an error), else the end.
        first = next((i for i, line in enumerate(lines) if FIRST_FAILURE.search(line)), None)
        shown = lines[max(first - 2, 0): first - 2 + args.lines] if first is not None else lines[-args.lines:]
        where = f"from line {max(first - 2, 0) + 1}" if first is not None else "the end"
        print(f"--- {name}: {len(shown)} of its {len(lines)} output lines, {where}")
        for line in shown:
            print(f"    {line[:400]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
