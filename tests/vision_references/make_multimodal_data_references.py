#!/usr/bin/env python3
"""Reference samples of torchtune 0.6.1's multimodal datasets (the_cauldron_dataset and
vqa_dataset), for fthost's tests of its native readers of the same files.

  .venv/bin/python tests/vision_references/make_multimodal_data_references.py OUT_DIR

Writes OUT_DIR/multimodal_data/:
- cauldron.parquet: 3 records in The Cauldron's layout (images: list of Hugging Face Image,
  texts: list of {user, assistant, source}), written by the datasets library so that every image
  is stored inline as struct{bytes, path} with the encoded file in bytes and path null, as the
  published the_cauldron parquet files hold them. Record 0: one image, two turns; record 1: two
  images, one turn; record 2: one JPEG image, one turn.
- images/ and vqa.json: 2 records {input, output, image} with image a file name under images/.
- vqa.parquet: the same 2 records with the image stored inline (Image feature).
- references.safetensors: for sample i of dataset D (cauldron, vqa_json, vqa_parquet), what
  torchtune's dataset returns through llama3_2_vision_transform (tiktoken tokenizer, 28 px CLIP
  tiles, at most 4 tiles, VisionCrossAttentionMask):
    D.i.tokens, D.i.labels                     int64 [tokens]
    D.i.image.j.tiles                          bfloat16 [tiles, 3, 28, 28], the transform's dtype
    D.i.image.j.aspect_ratio                   int64 [2], (rows, columns) of tiles
    D.i.image.j.encoder_mask                   bool [tokens, tiles * 5], torchtune's per-image mask
  and the metadata "counts": JSON {D: {"samples": n, "images": [images of sample i, ...]}}.

The images are seeded patterns (gradient, boxes, noise), PNG and JPEG, sized so that each image
gets a different tile grid. Texts carry leading and trailing white space and inner newlines, since
torchtune's tokenizer strips each text item but keeps what is inside. vqa_json and vqa_parquet
hold the same records and the same encoded image bytes, so the script requires torchtune to give
them identical samples: reading a file from image_dir and decoding inline bytes must agree.
"""
import argparse
import json
import os
import pathlib
import sys
import tempfile

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from datasets import Features, Sequence, Value
from datasets import Image as ImageFeature
from safetensors.torch import load_file, save_file

from torchtune.datasets.multimodal import the_cauldron_dataset, vqa_dataset

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
# The seeded image patterns, their encoding, the transform and the sizes of Llama 3.2 Vision's references.
from make_vision_golden import IMAGE_TOKEN, MAX_SEQ_LEN, PATCH, TILE, encode, fail, reference_transform  # noqa: E402

TOKENS_PER_TILE = (TILE // PATCH) ** 2 + 1   # patches + CLS

# (seed, width, height, format, expected (rows, columns) of 28 px tiles). With at most 4 tiles and
# no upscaling past one tile (resize_to_max_canvas=False), each size gets its own grid.
CAULDRON_IMAGES = [
    [(2000, 50, 24, "PNG", (1, 2))],
    [(2001, 40, 30, "PNG", (2, 2)), (2002, 25, 100, "JPEG", (4, 1))],
    [(2003, 90, 30, "JPEG", (1, 3))],
]
CAULDRON_TEXTS = [
    [{"user": "  What is drawn here?\nAnswer briefly. ", "assistant": "A gradient with boxes.\n", "source": "x"},
     {"user": "And the main colour?", "assistant": " Mostly a warm tone.", "source": "x"}],
    [{"user": "Compare the two images.", "assistant": "The first is square, the second tall.", "source": "x"}],
    [{"user": "Question: is it wide?\nChoices: yes, no", "assistant": "Answer: yes", "source": "x"}],
]
VQA_IMAGES = [
    ("vqa0.png", (2100, 30, 90, "PNG", (3, 1))),
    ("vqa1.jpg", (2101, 20, 50, "JPEG", (2, 1))),
]
VQA_TEXTS = [
    {"input": " What shape is the image?\n", "output": "Tall and narrow."},
    {"input": "Name a colour in it.", "output": "  Blue, near the top.  "},
]


def inline(data):
    # Handing datasets the encoded bytes (not a PIL image) stores them verbatim: a PIL image would
    # be re-encoded (as PNG when it has no format) or, if opened from a file, stored as a path.
    return {"bytes": data, "path": None}


def check_inline_images(path, column, expected):
    """The parquet column is Hugging Face's inline Image layout (struct{bytes: binary, path:
    string}, in a list for The Cauldron) and holds exactly the bytes written."""
    table = pq.read_table(path)
    image_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    field_type = table.schema.field(column).type
    if isinstance(expected[0], list):
        # The list's item field name (datasets writes "element") is not part of the layout.
        if not (pa.types.is_list(field_type) and field_type.value_type.equals(image_type)):
            fail(f"{path.name}: column {column} is {field_type}, not a list of {image_type}")
    elif not field_type.equals(image_type):
        fail(f"{path.name}: column {column} is {field_type}, not {image_type}")
    for i, (stored, wanted) in enumerate(zip(table.column(column).to_pylist(), expected)):
        stored, wanted = (stored, wanted) if isinstance(wanted, list) else ([stored], [wanted])
        if [s["bytes"] for s in stored] != wanted or any(s["path"] is not None for s in stored):
            fail(f"{path.name}: record {i} does not hold the written bytes inline with a null path")


def write_data(out):
    images_dir = out / "images"
    images_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("cauldron.parquet", "vqa.parquet", "vqa.json", "references.safetensors"):
        (out / stale).unlink(missing_ok=True)

    cauldron_bytes = [[encode(spec) for spec in record] for record in CAULDRON_IMAGES]
    features = Features({
        "images": Sequence(ImageFeature()),
        "texts": [{"user": Value("string"), "assistant": Value("string"), "source": Value("string")}],
    })
    datasets.Dataset.from_dict(
        {"images": [[inline(b) for b in record] for record in cauldron_bytes], "texts": CAULDRON_TEXTS},
        features=features).to_parquet(str(out / "cauldron.parquet"))
    check_inline_images(out / "cauldron.parquet", "images", cauldron_bytes)

    vqa_bytes = [encode(spec) for _, spec in VQA_IMAGES]
    for (name, _), data in zip(VQA_IMAGES, vqa_bytes):
        (images_dir / name).write_bytes(data)
    records = [dict(text, image=name) for text, (name, _) in zip(VQA_TEXTS, VQA_IMAGES)]
    (out / "vqa.json").write_text(json.dumps(records, indent=1) + "\n")
    features = Features({"input": Value("string"), "output": Value("string"), "image": ImageFeature()})
    datasets.Dataset.from_dict(
        {"input": [t["input"] for t in VQA_TEXTS], "output": [t["output"] for t in VQA_TEXTS],
         "image": [inline(b) for b in vqa_bytes]},
        features=features).to_parquet(str(out / "vqa.parquet"))
    check_inline_images(out / "vqa.parquet", "image", vqa_bytes)
    return images_dir


# ----------------------------------------------------------------------------------------------
# torchtune
# ----------------------------------------------------------------------------------------------
def load_all(out, images_dir, cache_dir):
    """Every sample of the three datasets as torchtune's SFTDataset returns it."""
    transform = reference_transform()
    cache = pathlib.Path(cache_dir)
    # subset keeps its default ("orcvqa"): for the packaged parquet builder the name only labels
    # the config, so a config that leaves it alone reads a local file the same way.
    built = {
        "cauldron": the_cauldron_dataset(
            model_transform=transform, source="parquet", data_files=str(out / "cauldron.parquet"),
            split="train", cache_dir=str(cache / "cauldron")),
        "vqa_json": vqa_dataset(
            model_transform=transform, source="json", data_files=str(out / "vqa.json"),
            image_dir=str(images_dir), split="train", cache_dir=str(cache / "vqa_json")),
        "vqa_parquet": vqa_dataset(
            model_transform=transform, source="parquet", data_files=str(out / "vqa.parquet"),
            split="train", cache_dir=str(cache / "vqa_parquet")),
    }
    return {name: [ds[i] for i in range(len(ds))] for name, ds in built.items()}


def check(name, samples, image_specs):
    if len(samples) != len(image_specs):
        fail(f"{name}: {len(samples)} samples, expected {len(image_specs)}")
    for i, (s, specs) in enumerate(zip(samples, image_specs)):
        images, ratios, masks = s["encoder_input"]["images"], s["encoder_input"]["aspect_ratio"], s["encoder_mask"]
        if not len(images) == len(ratios) == len(masks) == len(specs) == s["tokens"].count(IMAGE_TOKEN):
            fail(f"{name}.{i}: images, aspect ratios, masks and image tokens disagree in number")
        if len(s["tokens"]) >= MAX_SEQ_LEN:
            fail(f"{name}.{i} reaches max_seq_len and would be truncated")
        for j, (tiles, ratio, mask, spec) in enumerate(zip(images, ratios, masks, specs)):
            rows, cols = spec[4]
            if tuple(ratio.tolist()) != (rows, cols):
                fail(f"{name}.{i}.image.{j}: tile grid {tuple(ratio.tolist())}, expected {(rows, cols)}")
            if tiles.dtype != torch.bfloat16 or tuple(tiles.shape) != (rows * cols, 3, TILE, TILE):
                fail(f"{name}.{i}.image.{j}: tiles {tiles.dtype} {tuple(tiles.shape)}")
            if mask.dtype != torch.bool or tuple(mask.shape) != (len(s["tokens"]), rows * cols * TOKENS_PER_TILE):
                fail(f"{name}.{i}.image.{j}: encoder_mask {mask.dtype} {tuple(mask.shape)}")


def tensors(name, samples):
    out = {}
    for i, s in enumerate(samples):
        out[f"{name}.{i}.tokens"] = torch.tensor(s["tokens"], dtype=torch.int64)
        out[f"{name}.{i}.labels"] = torch.tensor([int(x) for x in s["labels"]], dtype=torch.int64)
        enc = s["encoder_input"]
        for j, (tiles, ratio, mask) in enumerate(zip(enc["images"], enc["aspect_ratio"], s["encoder_mask"])):
            out[f"{name}.{i}.image.{j}.tiles"] = tiles.contiguous()
            out[f"{name}.{i}.image.{j}.aspect_ratio"] = ratio.to(torch.int64).contiguous()
            out[f"{name}.{i}.image.{j}.encoder_mask"] = mask.contiguous()
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=pathlib.Path)
    out = parser.parse_args().out_dir / "multimodal_data"
    torch.set_num_threads(1)
    out.mkdir(parents=True, exist_ok=True)

    images_dir = write_data(out)
    with tempfile.TemporaryDirectory() as cache_dir:  # a fresh datasets cache: never a stale one
        samples = load_all(out, images_dir, cache_dir)

    vqa_specs = [[spec] for _, spec in VQA_IMAGES]
    check("cauldron", samples["cauldron"], CAULDRON_IMAGES)
    check("vqa_json", samples["vqa_json"], vqa_specs)
    check("vqa_parquet", samples["vqa_parquet"], vqa_specs)

    refs = {}
    for name, rows in samples.items():
        refs.update(tensors(name, rows))
    for key, value in refs.items():
        if key.startswith("vqa_json.") and not torch.equal(value, refs["vqa_parquet." + key[len("vqa_json."):]]):
            fail(f"{key}: the json (image_dir) and parquet (inline) readings differ")

    counts = {name: {"samples": len(rows), "images": [len(s["encoder_input"]["images"]) for s in rows]}
              for name, rows in samples.items()}
    path = out / "references.safetensors"
    # One metadata entry only: safetensors writes the metadata map in hash order, so with two
    # entries the file's bytes would change from run to run.
    save_file(refs, str(path), metadata={"counts": json.dumps(counts, sort_keys=True)})
    back = load_file(str(path))
    if back.keys() != refs.keys() or any(not torch.equal(back[k], v) for k, v in refs.items()):
        fail("references.safetensors does not read back")

    print(f"{out}: {len(refs)} tensors; " + ", ".join(
        f"{name} {c['samples']} samples ({sum(c['images'])} images)" for name, c in counts.items()))


if __name__ == "__main__":
    try:
        main()
    except Exception as error:
        sys.exit(f"make_multimodal_data_references: {type(error).__name__}: {error}")
