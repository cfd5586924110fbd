#!/usr/bin/env python3
"""Reference samples of torchtune's Llama 4 transform (llama4_transform: Llama4Tokenizer and
CLIPImageTransform with a global thumbnail) through the_cauldron_dataset, for fthost's tests of
its native Llama 4 image data path.

  .venv/bin/python tests/vision_references/make_llama4_data_references.py OUT_DIR TOKENIZER_MODEL

TOKENIZER_MODEL is Llama 4's tiktoken tokenizer.model (scripts/tokenizer_fixtures.py writes it to
build/tokenizer_fixtures/llama4/tokenizer.model). The installed torchtune (0.6.1) has no Llama 4,
so the script runs torchtune's current source from its git mirror
(/work/.mirror/pytorch+torchtune/repo, or $FT_TORCHTUNE_MIRROR; or a checked-out source tree in
$FT_TORCHTUNE_SOURCE), put first on sys.path. That source imports a few names from a newer torchao
than the one installed (NF4Tensor, to_nf4 and the nf4_tensor module under torchao.quantization);
they are aliased to the installed torchao.dtypes.nf4tensor, which the data path never calls.

Writes OUT_DIR/llama4_data/:
- cauldron.parquet: 4 records in The Cauldron's layout (images inline, as the published files
  hold them). Record 0: a small image (one tile, no thumbnail) and a squarish one (2 x 2 tiles
  and the thumbnail), one turn; record 1: one wide image, two turns; record 2: one tall JPEG
  image, one turn; record 3: one image larger than the biggest canvas (downscaled).
- references.safetensors: for sample i, what torchtune's the_cauldron_dataset returns through
  llama4_transform(image_size=56, max_num_tiles=16, max_seq_len=4096):
    full.i.tokens, full.i.labels      int64 [tokens]; labels unshifted, as torchtune 0.6.1 and
                                      fthost's samples have them (torchtune's current SFTDataset
                                      shifts them by one; shifted back here)
    full.i.image.j.tiles              bfloat16 [tiles (+1 thumbnail), 3, 56, 56]
    full.i.image.j.aspect_ratio       int64 [2], (rows, columns) of tiles
  and with max_seq_len = CUT (record 0 cut right after its first image's <|image_end|>; torchtune
  keeps both images, fthost drops the second, whose tokens are all past the cut):
    cut.0.tokens, cut.0.labels
  and Pillow's own bilinear resize (what torchvision's Resize does to a PIL image, the
  thumbnail's resize) of seeded patterns, both pass orders (Pillow 13 resizes vertically first
  when the height shrinks by more than twice as many pixels as the width), up and down:
    pil_resize.k.input                uint8 [height, width, 3]
    pil_resize.k.output               uint8 [out height, out width, 3]
  and the metadata "meta": JSON {"samples", "pillow" (its version), "images" (per sample), "cut" (the max_seq_len of the
  cut), "image_size", "max_num_tiles", "patch_tokens_per_tile", "ids" (the image special tokens)}.

Texts carry leading and trailing white space around the images, since torchtune strips each text
item of a message's content list.

No PyPI release of torchtune has Llama 4, and a clean machine has no git mirror of its source: the
two files this script made from torchtune's commit COMMITTED_FROM are kept beside it
(tests/vision_references/llama4_data/). Where torchtune's source is found, the script makes them
anew and fails unless the references equal the kept ones (tensors and metadata; refresh them with
--update-kept); where it is not, it copies the kept ones, saying so.
"""
import argparse
import importlib
import shutil
import io
import json
import os
import pathlib
import subprocess
import sys
import tarfile
import tempfile
import types

import PIL
import PIL.Image

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")

IMAGE_SIZE, MAX_TILES, MAX_SEQ_LEN = 56, 16, 4096
PATCH_TOKENS_PER_TILE = (IMAGE_SIZE // 14) ** 2 // 4   # pixel shuffle 0.5: a quarter of the patches
IGNORE = -100

# (seed, width, height, out width, out height) of the direct Pillow resizes.
PIL_RESIZES = [
    (4100, 60, 170, 56, 56),    # vertical first
    (4101, 100, 150, 50, 50),   # horizontal first: the height shrinks by exactly twice the width's
    (4102, 230, 60, 56, 56),    # wide
    (4103, 30, 40, 56, 20),     # width up, height down: vertical first
    (4104, 40, 30, 56, 56),     # both up
    (4105, 90, 45, 90, 20),     # height only
    (4106, 33, 77, 70, 77),     # width only
]

# (seed, width, height, format, expected (rows, columns) of 56 px tiles, at most 16 tiles: the
# canvas that upscales the image most, as resize_to_max_canvas=False picks it).
IMAGES = [
    [(4001, 40, 30, "PNG", (1, 1)), (4002, 100, 110, "PNG", (2, 2))],
    [(4000, 230, 60, "PNG", (2, 5))],
    [(4003, 60, 170, "JPEG", (4, 2))],
    [(4004, 700, 300, "PNG", (3, 5))],
]
TEXTS = [
    [{"user": "\nCompare the two images. ", "assistant": "The first is small, the second square.", "source": "x"}],
    [{"user": "  What is drawn here?\nAnswer briefly. ", "assistant": "A gradient with boxes.", "source": "x"},
     {"user": "And the main colour?", "assistant": "Mostly a warm tone.", "source": "x"}],
    [{"user": "Question: is it tall?\nChoices: yes, no", "assistant": "Answer: yes", "source": "x"}],
    [{"user": " Describe it.", "assistant": "A large wide picture.", "source": "x"}],
]


# The torchtune commit (its git mirror's HEAD) the kept references were made from.
COMMITTED_FROM = "bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1"
KEPT = pathlib.Path(__file__).resolve().parent / "llama4_data"
KEPT_FILES = ("references.safetensors", "cauldron.parquet")


def fail(message):
    raise SystemExit(f"make_llama4_data_references: {message}")


def torchtune_source(tmp):
    """A directory holding torchtune's current source (the package directory `torchtune`), or None
    where none is found."""
    if os.environ.get("FT_TORCHTUNE_SOURCE"):
        return pathlib.Path(os.environ["FT_TORCHTUNE_SOURCE"])
    mirror = os.environ.get("FT_TORCHTUNE_MIRROR", "/work/.mirror/pytorch+torchtune/repo")
    if not pathlib.Path(mirror).exists():
        return None
    archive = subprocess.run(["git", "-C", mirror, "archive", "HEAD", "torchtune"], check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tmp, filter="data")
    return pathlib.Path(tmp)


def check_against_kept(out, update):
    """The references just made against the kept ones: equal tensors and metadata, or refreshed."""
    from safetensors import safe_open
    import torch
    if update:
        KEPT.mkdir(exist_ok=True)
        for name in KEPT_FILES:
            shutil.copyfile(out / name, KEPT / name)
        print(f"make_llama4_data_references: kept references refreshed in {KEPT}")
        return
    made, kept = out / KEPT_FILES[0], KEPT / KEPT_FILES[0]
    with safe_open(str(made), "pt") as a, safe_open(str(kept), "pt") as b:
        if a.metadata() != b.metadata() or set(a.keys()) != set(b.keys()):
            fail(f"torchtune's source gives other references than {kept} (metadata or names differ); "
                 "refresh them with --update-kept if torchtune changed")
        for key in a.keys():
            if not torch.equal(a.get_tensor(key), b.get_tensor(key)):
                fail(f"torchtune's source gives another {key} than {kept}; refresh with --update-kept "
                     "if torchtune changed")


def copy_kept(out):
    for name in KEPT_FILES:
        if not (KEPT / name).exists():
            fail(f"neither torchtune's source (FT_TORCHTUNE_MIRROR, FT_TORCHTUNE_SOURCE) nor {KEPT / name}")
        shutil.copyfile(KEPT / name, out / name)
    print(f"make_llama4_data_references: torchtune's source not found; copied the references this script "
          f"made from torchtune {COMMITTED_FROM[:12]} ({KEPT})")


def import_torchtune(source):
    # The newer torchao names torchtune's source imports, aliased to the installed torchao's.
    import torchao.quantization
    import torchao.dtypes.nf4tensor as nf4
    torchao.quantization.NF4Tensor = nf4.NF4Tensor
    torchao.quantization.to_nf4 = nf4.to_nf4
    for name in ("torchao.quantization.quantize_", "torchao.quantization.quantize_.workflows",
                 "torchao.quantization.quantize_.workflows.nf4"):
        try:
            importlib.import_module(name)
        except ImportError:
            sys.modules[name] = types.ModuleType(name)
    sys.modules["torchao.quantization.quantize_.workflows.nf4.nf4_tensor"] = nf4
    for name in [m for m in sys.modules if m == "torchtune" or m.startswith("torchtune.")]:
        del sys.modules[name]
    sys.path.insert(0, str(source))
    import torchtune
    if not pathlib.Path(torchtune.__file__).resolve().is_relative_to(pathlib.Path(source).resolve()):
        fail(f"imported {torchtune.__file__}, not torchtune's source in {source}")
    from torchtune.datasets.multimodal import the_cauldron_dataset
    from torchtune.models.llama4 import llama4_transform
    return the_cauldron_dataset, llama4_transform


def write_parquet(out, encode):
    import datasets
    from datasets import Features, Sequence, Value
    from datasets import Image as ImageFeature
    path = out / "cauldron.parquet"
    path.unlink(missing_ok=True)
    features = Features({
        "images": Sequence(ImageFeature()),
        "texts": [{"user": Value("string"), "assistant": Value("string"), "source": Value("string")}],
    })
    images = [[{"bytes": encode(spec), "path": None} for spec in record] for record in IMAGES]
    datasets.Dataset.from_dict({"images": images, "texts": TEXTS}, features=features).to_parquet(str(path))
    return path


def unshifted_labels(sample, name):
    """torchtune's current SFTDataset shifts the labels (labels[i] is the target of position i + 1,
    the last one ignored); fthost's samples carry torchtune 0.6.1's unshifted labels (the recipe
    shifts). The first position is BOS, which Llama4Tokenizer always masks, so shifting back is exact."""
    shifted = [int(x) for x in sample["labels"]]
    if shifted[-1] != IGNORE or len(shifted) != len(sample["tokens"]):
        fail(f"{name}: the labels are not shifted as torchtune's SFTDataset shifts them")
    return [IGNORE] + shifted[:-1]


def image_spans(tokens, start_id, end_id):
    """(first, last) positions of each <|image_start|> ... <|image_end|> run."""
    spans, begin = [], None
    for i, t in enumerate(tokens):
        if t == start_id:
            begin = i
        elif t == end_id:
            spans.append((begin, i))
    return spans


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=pathlib.Path)
    parser.add_argument("tokenizer_model", type=pathlib.Path)
    parser.add_argument("--update-kept", action="store_true",
                        help="replace the kept references with the ones torchtune's source makes")
    args = parser.parse_args()
    if not args.tokenizer_model.exists():
        fail(f"{args.tokenizer_model} not found: run scripts/tokenizer_fixtures.py first")
    out = args.out_dir / "llama4_data"
    out.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory() as tmp:
        source = torchtune_source(pathlib.Path(tmp) / "src")
        if source is None:
            copy_kept(out)
            return
        the_cauldron_dataset, llama4_transform = import_torchtune(source)
        import torch
        from safetensors.torch import load_file, save_file
        torch.set_num_threads(1)
        sys.path.insert(1, str(pathlib.Path(__file__).resolve().parent))
        from make_vision_golden import encode, pattern  # noqa: E402  (the seeded image patterns, encoded)

        parquet = write_parquet(out, encode)

        def load(max_seq_len):
            transform = llama4_transform(path=str(args.tokenizer_model), max_seq_len=max_seq_len,
                                         image_size=IMAGE_SIZE, max_num_tiles=MAX_TILES)
            ds = the_cauldron_dataset(model_transform=transform, source="parquet", data_files=str(parquet),
                                      split="train", cache_dir=str(pathlib.Path(tmp) / f"cache{max_seq_len}"))
            return transform, [ds[i] for i in range(len(ds))]

        transform, samples = load(MAX_SEQ_LEN)
        tok = transform.tokenizer
        if transform.patch_tokens_per_tile != PATCH_TOKENS_PER_TILE:
            fail(f"{transform.patch_tokens_per_tile} patch tokens per tile, expected {PATCH_TOKENS_PER_TILE}")
        refs = {}
        for i, (s, specs) in enumerate(zip(samples, IMAGES)):
            images = s["encoder_input"]["vision"]["images"]
            ratios = [sp[4] for sp in specs]
            if len(images) != len(specs) or s["tokens"].count(tok.image_start) != len(specs):
                fail(f"sample {i}: {len(images)} images, expected {len(specs)}")
            if len(s["tokens"]) >= MAX_SEQ_LEN:
                fail(f"sample {i} reaches max_seq_len")
            refs[f"full.{i}.tokens"] = torch.tensor(s["tokens"], dtype=torch.int64)
            refs[f"full.{i}.labels"] = torch.tensor(unshifted_labels(s, f"sample {i}"), dtype=torch.int64)
            # The canvas of each image as torchtune's tokenizer laid out its tile grid (Llama4Transform
            # keeps the aspect ratio in the message, not in the sample): rows are the
            # <|tile_y_separator|>s, columns one more than a row's <|tile_x_separator|>s.
            spans = image_spans(s["tokens"], tok.image_start, tok.image_end)
            for j, (tiles, (begin, end), (rows, cols)) in enumerate(zip(images, spans, ratios)):
                grid = s["tokens"][begin:end + 1]
                y = grid.count(tok.tile_y_separator)
                grid_ratio = (y, grid.count(tok.tile_x_separator) // y + 1) if y else (1, 1)
                if grid_ratio != (rows, cols):
                    fail(f"sample {i} image {j}: tile grid {grid_ratio}, expected {(rows, cols)}")
                want = rows * cols + (1 if rows * cols > 1 else 0)
                if grid.count(tok.patch_id) != want * PATCH_TOKENS_PER_TILE:
                    fail(f"sample {i} image {j}: {grid.count(tok.patch_id)} patch tokens for {want} tiles")
                if tiles.dtype != torch.bfloat16 or tuple(tiles.shape) != (want, 3, IMAGE_SIZE, IMAGE_SIZE):
                    fail(f"sample {i} image {j}: tiles {tiles.dtype} {tuple(tiles.shape)}, expected {want} tiles")
                refs[f"full.{i}.image.{j}.tiles"] = tiles.contiguous()
                refs[f"full.{i}.image.{j}.aspect_ratio"] = torch.tensor(grid_ratio, dtype=torch.int64)

        # Record 0 cut right after its first image: max_seq_len = that <|image_end|>'s position + 2
        # (the kept tokens end with it, then the EOS that truncation writes last).
        first_end = image_spans(samples[0]["tokens"], tok.image_start, tok.image_end)[0][1]
        cut = first_end + 2
        _, cut_samples = load(cut)
        refs["cut.0.tokens"] = torch.tensor(cut_samples[0]["tokens"], dtype=torch.int64)
        refs["cut.0.labels"] = torch.tensor(unshifted_labels(cut_samples[0], "cut sample 0"), dtype=torch.int64)
        if len(cut_samples[0]["tokens"]) != cut or cut_samples[0]["tokens"][-1] != tok.eos_id:
            fail("the cut sample is not max_seq_len long ending in EOS")

        for k, (seed, w, h, ow, oh) in enumerate(PIL_RESIZES):
            image = pattern(seed, w, h)
            refs[f"pil_resize.{k}.input"] = torch.tensor(list(image.tobytes()), dtype=torch.uint8).view(h, w, 3)
            resized = image.resize((ow, oh), resample=PIL.Image.Resampling.BILINEAR)
            refs[f"pil_resize.{k}.output"] = torch.tensor(list(resized.tobytes()), dtype=torch.uint8).view(oh, ow, 3)

    meta = {
        "samples": len(samples), "images": [len(specs) for specs in IMAGES], "cut": cut,
        "pillow": PIL.__version__, "pil_resizes": len(PIL_RESIZES),
        "image_size": IMAGE_SIZE, "max_num_tiles": MAX_TILES, "max_seq_len": MAX_SEQ_LEN,
        "patch_tokens_per_tile": PATCH_TOKENS_PER_TILE,
        "ids": {"image_start": tok.image_start, "image_end": tok.image_end, "image": tok.image_id,
                "patch": tok.patch_id, "tile_x_separator": tok.tile_x_separator,
                "tile_y_separator": tok.tile_y_separator, "eos": tok.eos_id, "pad": tok.pad_id},
    }
    path = out / "references.safetensors"
    # One metadata entry only: safetensors writes the metadata map in hash order.
    save_file(refs, str(path), metadata={"meta": json.dumps(meta, sort_keys=True)})
    back = load_file(str(path))
    if back.keys() != refs.keys() or any(not torch.equal(back[k], v) for k, v in refs.items()):
        fail("references.safetensors does not read back")
    check_against_kept(out, args.update_kept)
    print(f"{out}: {len(refs)} tensors, {len(samples)} samples, cut at {cut}")


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except Exception as error:
        sys.exit(f"make_llama4_data_references: {type(error).__name__}: {error}")
