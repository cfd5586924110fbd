#!/usr/bin/env python3
"""Writes the shared instruct and chat fixtures ($FT_FIXTURES/data) in every form fthost reads
through Apache Arrow, each made by the library users make them with: Hugging Face `datasets`
(to_parquet, save_to_disk, to_csv) and pyarrow (row groups, shards, damaged files), plus a Hugging
Face Hub cache laid out as huggingface_hub lays it out (blobs, snapshots linking to them, refs).
The tests compare what fthost reads from each with the JSON it came from.

  python tests/dataset_fixtures/make_dataset_fixtures.py OUT [--fixtures DIR]

ctest runs it (the dataset_fixtures fixture) with the project's interpreter. The result replaces
OUT only when complete.
"""

import argparse
import hashlib
import json
import os
import shutil

import datasets
import pyarrow as pa
import pyarrow.parquet as pq

datasets.disable_progress_bars()


def hub_repo(cache, name, commit, files, refs=("main",)):
    """A dataset repo in a huggingface_hub cache: blobs by content hash, the snapshot's files as
    relative symlinks to them, and refs naming the commit."""
    repo = os.path.join(cache, "datasets--" + name.replace("/", "--"))
    for relative, source in files.items():
        with open(source, "rb") as f:
            data = f.read()
        blob = os.path.join(repo, "blobs", hashlib.sha256(data).hexdigest())
        os.makedirs(os.path.dirname(blob), exist_ok=True)
        with open(blob, "wb") as f:
            f.write(data)
        link = os.path.join(repo, "snapshots", commit, relative)
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.relpath(blob, os.path.dirname(link)), link)
    os.makedirs(os.path.join(repo, "refs"), exist_ok=True)
    for ref in refs:
        with open(os.path.join(repo, "refs", ref), "w") as f:
            f.write(commit)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--fixtures", default=os.environ.get("FT_FIXTURES") or os.path.join(root, "..", "shared", "fixtures"),
                        help="the shared fixtures: $FT_FIXTURES, else ../shared/fixtures next to the source tree")
    a = parser.parse_args()
    tmp = a.out + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    p = lambda *parts: os.path.join(tmp, *parts)  # noqa: E731

    alpaca = datasets.load_dataset("json", data_files=os.path.join(a.fixtures, "data", "alpaca_tiny.json"),
                                   split="train")
    n = len(alpaca)
    # Parquet as datasets writes it, and as pyarrow writes it in several row groups.
    alpaca.to_parquet(p("alpaca.parquet"))
    pq.write_table(alpaca.data.table, p("alpaca_row_groups.parquet"), row_group_size=30)
    # The same records as three Parquet shards, read back through a glob or their directory.
    os.makedirs(p("alpaca_shards"))
    for i, start in enumerate(range(0, n, 40)):
        alpaca.select(range(start, min(n, start + 40))).to_parquet(p("alpaca_shards", f"part-{i:05d}.parquet"))
    alpaca.to_csv(p("alpaca.csv"), index=False)
    alpaca.to_json(p("alpaca.jsonl"))
    alpaca.save_to_disk(p("alpaca_saved"), num_shards=2)
    split = alpaca.train_test_split(test_size=0.25, shuffle=False)
    split.save_to_disk(p("alpaca_dict"))
    split["train"].to_json(p("alpaca_train.jsonl"))
    split["test"].to_json(p("alpaca_test.jsonl"))

    chat = datasets.load_dataset("json", data_files=os.path.join(a.fixtures, "data", "chat_tiny.json"),
                                 split="train")
    chat.to_parquet(p("chat.parquet"))

    # A Hub cache: a Parquet repo with train and test splits (the layout the Hub's Parquet
    # conversion uses), a second revision under a tag, and a JSON repo without split names.
    with open(p("README.md"), "w") as f:
        f.write("---\nlicense: cc-by-4.0\n---\nA dataset card, not data.\n")
    split["train"].to_parquet(p("train.parquet"))
    split["test"].to_parquet(p("test.parquet"))
    cache = p("hub")
    commit = "0123456789abcdef0123456789abcdef01234567"
    hub_repo(cache, "fthost-tests/alpaca", commit,
             {"data/train-00000-of-00001.parquet": p("train.parquet"),
              "data/test-00000-of-00001.parquet": p("test.parquet"), "README.md": p("README.md")})
    older = "89abcdef0123456789abcdef0123456789abcdef"
    hub_repo(cache, "fthost-tests/alpaca", older, {"data/train-00000-of-00001.parquet": p("test.parquet")},
             refs=("v0.1",))
    with open(p("dataset_infos.json"), "w") as f:  # metadata some JSON repos carry beside the data
        json.dump({"default": {"description": "", "features": {}}}, f)
    hub_repo(cache, "fthost-tests/alpaca-json", commit,
             {"alpaca_data_cleaned.json": os.path.join(a.fixtures, "data", "alpaca_tiny.json"),
              "dataset_infos.json": p("dataset_infos.json")})
    os.remove(p("dataset_infos.json"))
    for name in ("train.parquet", "test.parquet", "README.md"):
        os.remove(p(name))

    # Damaged and mistyped files.
    with open(p("alpaca.parquet"), "rb") as f:
        data = f.read()
    with open(p("truncated.parquet"), "wb") as f:
        f.write(data[: len(data) // 2])
    table = alpaca.data.table
    pq.write_table(table.drop_columns(["instruction"]), p("no_instruction.parquet"))
    pq.write_table(table.set_column(table.schema.get_field_index("instruction"), "instruction",
                                    pa.array(list(range(n)), pa.int64())), p("int_instruction.parquet"))
    pq.write_table(table.slice(0, 0), p("empty.parquet"))

    with open(p("counts.json"), "w") as f:
        json.dump({"alpaca": n, "alpaca_train": len(split["train"]), "alpaca_test": len(split["test"]),
                   "chat": len(chat)}, f)
    shutil.rmtree(a.out, ignore_errors=True)
    os.rename(tmp, a.out)


if __name__ == "__main__":
    main()
