#!/usr/bin/env python3
"""EXIF orientation as torchtune 0.6.1's data path sees it, for tests/unit/exif_orientation_test.cpp.

  .venv/bin/python tests/vision_references/make_exif_references.py OUT_DIR

torchtune's data path decodes an image two ways. An image stored in a dataset record (Parquet,
Arrow: Hugging Face's Image feature, as The Cauldron holds its images) is decoded by `datasets`,
whose Image.decode_example transposes it by its EXIF orientation (PIL.ImageOps.exif_transpose)
when Pillow's getexif() finds one; an image named by a path (vqa_dataset, multimodal_chat_dataset
and llava_instruct_dataset read a path with torchtune's load_image) is PIL.Image.open, not
transposed. torchtune's CLIPImageTransform then converts either to RGB.

Writes OUT_DIR/exif/:
- images/<case>: small seeded patterns (make_vision_golden.pattern) that Pillow writes as JPEG
  (4:4:4, quality 95), PNG and WebP, each orientation 1-8 in each format (Pillow's own EXIF
  writer), and the other places and forms Pillow reads an orientation from (XMP, PNG text chunks,
  EXIF after PNG's image data, numeric types other than SHORT, both byte orders, a tag split over
  two JPEG APP1 segments), and malformed EXIF data: what Pillow ignores (an IFD cut short or
  pointing outside the data, a block that is not TIFF data in a JPEG Pillow reads it from while
  opening) and what makes datasets raise (the same block where it does not, in PNG and WebP).
- references.safetensors:
    decoded.<case>   uint8 [H, W, 3]: datasets.Image().decode_example({"bytes", "path": None})
                     then .convert("RGB"); absent where datasets raises
    opened.<case>    uint8 [H, W, 3]: PIL.Image.open(...).convert("RGB"), torchtune's load_image
    <dataset>.0.*    torchtune's sample (tokens, labels, image.j.tiles / aspect_ratio /
                     encoder_mask; make_multimodal_data_references.tensors' layout) for
                     cauldron (the_cauldron_dataset over cauldron.parquet: a JPEG of orientation 6
                     and a PNG of orientation 3 stored in the record), vqa_parquet (vqa_dataset,
                     the JPEG stored in the record), vqa_parquet_path (vqa_dataset, the Image
                     feature holding the JPEG's absolute path instead of its bytes) and vqa_json
                     (vqa_dataset, the same JPEG by path under image_dir), through
                     llama3_2_vision_transform (28 px tiles, 4 at most;
                     make_vision_golden.reference_transform)
  and one metadata entry "meta": JSON {"cases": {case: {"file", "format", "orientation": the
  transposition datasets applied (1-8), or null where it raises, "raises": its error or null}},
  "datasets": {dataset: {"samples", "images"}}, "versions": {...}}.

Each case names the outcome it was built for; the script fails when datasets (Pillow) does
otherwise, so the references keep saying what the test names claim.
"""
import io
import json
import os
import pathlib
import struct
import sys
import tempfile
import warnings
import zlib

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")

import datasets
import numpy as np
import PIL
import pyarrow.parquet as pq
import torch
import torchtune
from datasets import Features, Sequence, Value
from datasets import Image as ImageFeature
from PIL import Image
from safetensors.torch import load_file, save_file

from torchtune.datasets.multimodal import the_cauldron_dataset, vqa_dataset

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
# The seeded patterns, torchtune's transform on the fixtures' tokenizer, and how samples are
# written (make_multimodal_data_references: the inline Image layout and the tensors' names).
from make_multimodal_data_references import check_inline_images, inline, tensors  # noqa: E402
from make_vision_golden import fail, pattern, reference_transform  # noqa: E402

# PIL.ImageOps.exif_transpose's table.
TRANSPOSE = {
    2: Image.Transpose.FLIP_LEFT_RIGHT, 3: Image.Transpose.ROTATE_180, 4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE, 6: Image.Transpose.ROTATE_270, 7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}
WIDTH, HEIGHT = 13, 7   # not square, odd: every transposition gives a different image
RAISES = "raises"


# ----------------------------------------------------------------------------------------------
# EXIF blocks and containers
# ----------------------------------------------------------------------------------------------
def pillow_exif(orientation, endian=">"):
    """Pillow's own EXIF writer: "Exif\\0\\0" and TIFF data holding tag 0x0112 only."""
    exif = Image.Exif()
    exif.endian = endian
    exif[0x0112] = orientation
    return exif.tobytes()


def tiff(entries, endian="<", ifd_offset=8, count=None, tail=b""):
    """TIFF data of one IFD at ifd_offset (8: right after the header): entries are (tag, type,
    count, value) with value the 4-byte field (an int: an offset) and `tail` after the IFD."""
    head = (b"II*\x00" if endian == "<" else b"MM\x00*") + struct.pack(endian + "L", ifd_offset)
    body = struct.pack(endian + "H", len(entries) if count is None else count)
    for tag, typ, n, value in entries:
        field = struct.pack(endian + "L", value) if isinstance(value, int) else value.ljust(4, b"\0")
        body += struct.pack(endian + "HHL", tag, typ, n) + field
    return head + body + struct.pack(endian + "L", 0) + tail


def short(value, endian="<"):
    return struct.pack(endian + "H", value)


IFD_END = 8 + 2 + 12 + 4     # where tiff()'s tail starts for one entry
IFD_END_2 = 8 + 2 + 24 + 4   # ... for two entries


def encoded(fmt, width=WIDTH, height=HEIGHT, seed=0, **options):
    buffer = io.BytesIO()
    image = pattern(3000 + seed, width, height)
    if fmt == "JPEG":
        image.save(buffer, format="JPEG", quality=95, subsampling=0, **options)
    elif fmt == "PNG":
        image.save(buffer, format="PNG", **options)
    else:
        image.save(buffer, format="WEBP", **({"lossless": True} | options))
    return buffer.getvalue()


def jpeg_with(segments, density_unit=None, seed=0):
    """A JPEG with APP segments (marker, payload) inserted after its JFIF APP0; density_unit sets
    JFIF's unit byte (Pillow writes 0, no DPI; 1 is dots per inch)."""
    data = bytearray(encoded("JPEG", seed=seed))
    if data[2:4] != b"\xff\xe0" or data[6:11] != b"JFIF\0":
        fail("Pillow's JPEG does not start with a JFIF APP0 segment")
    if density_unit is not None:
        data[13] = density_unit
        data[14:18] = struct.pack(">HH", 72, 72)
    end = 4 + struct.unpack(">H", data[4:6])[0]
    inserted = b"".join(bytes([0xFF, m]) + struct.pack(">H", len(p) + 2) + p for m, p in segments)
    return bytes(data[:end]) + inserted + bytes(data[end:])


def app1_exif(block):
    return 0xE1, (block if block.startswith(b"Exif\0\0") else b"Exif\0\0" + block)


def app1_xmp(packet):
    return 0xE1, b"http://ns.adobe.com/xap/1.0/\x00" + packet


def png_chunk(cid, data):
    return struct.pack(">L", len(data)) + cid + data + struct.pack(">L", zlib.crc32(cid + data) & 0xFFFFFFFF)


def png_with(before_image=(), after_image=(), seed=0):
    """A PNG with chunks inserted before its first IDAT and before IEND."""
    data = encoded("PNG", seed=seed)
    out, pos, placed = data[:8], 8, False
    while pos < len(data):
        length = struct.unpack(">L", data[pos:pos + 4])[0]
        cid = data[pos + 4:pos + 8]
        if cid == b"IDAT" and not placed:
            out += b"".join(before_image)
            placed = True
        if cid == b"IEND":
            out += b"".join(after_image)
        out += data[pos:pos + 12 + length]
        pos += 12 + length
    return out


def raw_profile(block):
    """ImageMagick's "Raw profile type exif" text: a name, the length, then the bytes in hex."""
    hexdump = block.hex()
    lines = "\n".join(hexdump[i:i + 72] for i in range(0, len(hexdump), 72))
    return f"\nexif\n{len(block):8d}\n{lines}\n".encode()


def webp_chunks(data):
    chunks, pos = [], 12
    while pos + 8 <= len(data):
        size = struct.unpack("<L", data[pos + 4:pos + 8])[0]
        chunks.append([data[pos:pos + 4], data[pos + 8:pos + 8 + size]])
        pos += 8 + size + (size & 1)
    return chunks


def riff(chunks):
    body = b"WEBP" + b"".join(c + struct.pack("<L", len(p)) + p + b"\0" * (len(p) & 1) for c, p in chunks)
    return b"RIFF" + struct.pack("<L", len(body)) + body


def webp_vp8x_flags(data, clear):
    chunks = webp_chunks(data)
    if chunks[0][0] != b"VP8X":
        fail("Pillow's WebP with EXIF has no VP8X header")
    chunks[0][1] = bytes([chunks[0][1][0] & ~clear]) + chunks[0][1][1:]
    return riff(chunks)


# ----------------------------------------------------------------------------------------------
# The cases: (name, file bytes, the orientation datasets should apply or RAISES)
# ----------------------------------------------------------------------------------------------
def cases():
    o6_le = tiff([(0x0112, 3, 1, short(6))])
    not_tiff = b"XX*\x00\x08\x00\x00\x00" + tiff([(0x0112, 3, 1, short(6))])[8:]
    out = []
    for fmt, ext in (("JPEG", "jpg"), ("PNG", "png"), ("WEBP", "webp")):
        for n in range(1, 9):
            out.append((f"{ext}_orientation_{n}.{ext}", encoded(fmt, seed=n, exif=pillow_exif(n)), n))
    out += [
        # JPEG: byte orders, values out of range, other numeric types, several entries or segments.
        ("jpg_orientation_6_little_endian.jpg", encoded("JPEG", seed=9, exif=pillow_exif(6, "<")), 6),
        ("jpg_orientation_8_little_endian.jpg", encoded("JPEG", seed=10, exif=pillow_exif(8, "<")), 8),
        ("jpg_orientation_0.jpg", jpeg_with([app1_exif(tiff([(0x0112, 3, 1, short(0))]))]), 1),
        ("jpg_orientation_9.jpg", jpeg_with([app1_exif(tiff([(0x0112, 3, 1, short(9))]))]), 1),
        ("jpg_orientation_long_5.jpg", jpeg_with([app1_exif(tiff([(0x0112, 4, 1, struct.pack("<L", 5))]))]), 5),
        ("jpg_orientation_rational_12_over_2.jpg",
         jpeg_with([app1_exif(tiff([(0x0112, 5, 1, IFD_END)], tail=struct.pack("<LL", 12, 2)))]), 6),
        ("jpg_orientation_float_7.jpg", jpeg_with([app1_exif(tiff([(0x0112, 11, 1, struct.pack("<f", 7.0))]))]), 7),
        ("jpg_orientation_byte_type_6.jpg", jpeg_with([app1_exif(tiff([(0x0112, 1, 1, b"\x06")]))]), 1),
        ("jpg_orientation_text_6.jpg", jpeg_with([app1_exif(tiff([(0x0112, 2, 2, b"6\0")]))]), 1),
        ("jpg_orientation_two_values_5_1.jpg", jpeg_with([app1_exif(tiff([(0x0112, 3, 2, short(5) + short(1))]))]), 5),
        ("jpg_first_of_two_entries_3.jpg",
         jpeg_with([app1_exif(tiff([(0x0112, 3, 1, short(3)), (0x0112, 3, 1, short(6))]))]), 3),
        ("jpg_unknown_type_then_entry_4.jpg",
         jpeg_with([app1_exif(tiff([(0x0112, 14, 1, short(6)), (0x0112, 3, 1, short(4))]))]), 4),
        # Pillow concatenates APP1 EXIF segments: the IFD of the first sits in the second.
        ("jpg_exif_over_two_segments_7.jpg", jpeg_with([
            (0xE1, b"Exif\0\0II*\x00" + struct.pack("<L", 14) + b"\0" * 6),
            (0xE1, b"Exif\0\0" + struct.pack("<H", 1) + struct.pack("<HHL", 0x0112, 3, 1) + short(7) + b"\0" * 6)]), 7),
        ("jpg_xmp_attribute_8.jpg", jpeg_with([app1_xmp(b'<rdf:Description tiff:Orientation="8"/>')]), 8),
        ("jpg_xmp_element_5.jpg", jpeg_with([app1_xmp(b"<tiff:Orientation>5</tiff:Orientation>")]), 5),
        ("jpg_exif_1_before_xmp_6.jpg", jpeg_with([app1_exif(tiff([(0x0112, 3, 1, short(1))])),
                                                   app1_xmp(b'tiff:Orientation="6"')]), 1),
        ("jpg_exif_without_tag_xmp_6.jpg", jpeg_with([app1_exif(tiff([(0x010F, 2, 2, b"a\0")])),
                                                      app1_xmp(b'tiff:Orientation="6"')]), 6),
        # Malformed: what Pillow tolerates.
        ("jpg_malformed_ifd_outside_data.jpg", jpeg_with([app1_exif(tiff([(0x0112, 3, 1, short(6))], ifd_offset=900))]), 1),
        ("jpg_malformed_ifd_cut_short_6.jpg", jpeg_with([app1_exif(tiff([(0x0112, 3, 1, short(6))], count=5))]), 6),
        ("jpg_malformed_offset_outside_before_tag.jpg",
         jpeg_with([app1_exif(tiff([(0x010F, 2, 20, 5000), (0x0112, 3, 1, short(6))]))]), 1),
        ("jpg_malformed_oversized_before_tag_6.jpg",
         jpeg_with([app1_exif(tiff([(0x010F, 2, 100000, IFD_END_2), (0x0112, 3, 1, short(6))]))]), 6),
        # Not TIFF data: Pillow reads a JPEG's EXIF while opening it when JFIF gives no DPI, and
        # swallows the error (the XMP is then not read either); with a DPI, datasets raises.
        ("jpg_malformed_not_tiff_no_dpi.jpg", jpeg_with([app1_exif(not_tiff), app1_xmp(b'tiff:Orientation="6"')]), 1),
        ("jpg_malformed_not_tiff_dpi.jpg", jpeg_with([app1_exif(not_tiff)], density_unit=1), RAISES),
        ("jpg_malformed_short_header_dpi.jpg", jpeg_with([app1_exif(b"II*\x00\x08")], density_unit=1), RAISES),
        ("jpg_malformed_bigtiff_dpi.jpg", jpeg_with([app1_exif(b"II+\x00" + o6_le[4:])], density_unit=1), RAISES),
        # PNG: after the image data, ImageMagick's hex text, XMP; malformed.
        ("png_exif_after_image_data_3.png", png_with(after_image=[png_chunk(b"eXIf", tiff([(0x0112, 3, 1, short(3))]))]), 3),
        ("png_raw_profile_ztxt_6.png",
         png_with([png_chunk(b"zTXt", b"Raw profile type exif\0\0" + zlib.compress(raw_profile(b"Exif\0\0" + o6_le)))]), 6),
        ("png_xmp_itxt_8.png",
         png_with([png_chunk(b"iTXt", b"XML:com.adobe.xmp\0\0\0\0\0" + b'<x tiff:Orientation="8"/>')]), 8),
        ("png_malformed_not_tiff.png", png_with([png_chunk(b"eXIf", not_tiff)]), RAISES),
        ("png_malformed_raw_profile_not_hex.png",
         png_with([png_chunk(b"tEXt", b"Raw profile type exif\0\nexif\n 8\nzz\n")]), RAISES),
        # WebP: lossy, XMP, an EXIF chunk VP8X does not flag (libwebp's demuxer drops it); malformed.
        ("webp_lossy_orientation_6.webp", encoded("WEBP", seed=11, lossless=False, quality=90, exif=pillow_exif(6)), 6),
        ("webp_xmp_5.webp", encoded("WEBP", seed=12, xmp=b'<x tiff:Orientation="5"/>'), 5),
        ("webp_exif_not_flagged.webp", webp_vp8x_flags(encoded("WEBP", seed=13, exif=pillow_exif(6)), 0x08), 1),
        ("webp_malformed_not_tiff.webp", encoded("WEBP", seed=14, exif=not_tiff), RAISES),
    ]
    return out


def decode_as_datasets(data):
    """What datasets' Image feature gives for a record's image, converted to RGB as torchtune's
    CLIPImageTransform converts it; or the exception's text."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the malformed EXIF Pillow tolerates
            return ImageFeature().decode_example({"bytes": data, "path": None}).convert("RGB"), None
    except Exception as error:
        return None, f"{type(error).__name__}: {error}"


def pixels(image):
    return torch.from_numpy(np.asarray(image, dtype=np.uint8).copy())


def write_cases(out):
    images = out / "images"
    images.mkdir(parents=True, exist_ok=True)
    refs, meta = {}, {}
    for name, data, intended in cases():
        (images / name).write_bytes(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the malformed EXIF Pillow tolerates
            opened = Image.open(io.BytesIO(data))
            fmt = opened.format
            opened = opened.convert("RGB")   # torchtune's load_image, then CLIPImageTransform's convert
        decoded, error = decode_as_datasets(data)
        if error is not None:
            if intended != RAISES:
                fail(f"{name}: datasets raises ({error}), expected orientation {intended}")
            orientation = None
        else:
            matches = [n for n in range(1, 9) if (opened if n == 1 else opened.transpose(TRANSPOSE[n])).tobytes()
                       == decoded.tobytes() and decoded.size == (opened.size if n < 5 else opened.size[::-1])]
            if intended == RAISES or matches[:1] != [intended]:
                fail(f"{name}: datasets decodes it as orientation {matches}, expected {intended}")
            orientation = intended
            refs[f"decoded.{name}"] = pixels(decoded)
        refs[f"opened.{name}"] = pixels(opened)
        meta[name] = {"file": f"images/{name}", "format": fmt, "orientation": orientation, "raises": error}
    return refs, meta


# ----------------------------------------------------------------------------------------------
# torchtune's datasets on a rotated image, stored in a record and read by path
# ----------------------------------------------------------------------------------------------
# (width, height, orientation, stored (rows, columns) of 28 px tiles, as seen after the orientation)
ROTATED_JPEG = (100, 25, 6, (4, 1))
ROTATED_PNG = (50, 24, 3, (1, 2))


def write_datasets(out):
    for stale in ("cauldron.parquet", "vqa.parquet", "vqa_path.parquet", "vqa.json"):
        (out / stale).unlink(missing_ok=True)
    width, height, orientation, _ = ROTATED_JPEG
    jpeg = encoded("JPEG", width, height, seed=20, exif=pillow_exif(orientation))
    width, height, orientation, _ = ROTATED_PNG
    png = encoded("PNG", width, height, seed=21, exif=pillow_exif(orientation, "<"))
    (out / "images" / "rotated.jpg").write_bytes(jpeg)

    features = Features({
        "images": Sequence(ImageFeature()),
        "texts": [{"user": Value("string"), "assistant": Value("string"), "source": Value("string")}],
    })
    texts = [[{"user": "Which way is up?", "assistant": "The top, as the camera held it.", "source": "x"}]]
    datasets.Dataset.from_dict({"images": [[inline(jpeg), inline(png)]], "texts": texts},
                               features=features).to_parquet(str(out / "cauldron.parquet"))
    check_inline_images(out / "cauldron.parquet", "images", [[jpeg, png]])

    record = {"input": "Is the picture tall?", "output": "Tall when turned upright."}
    (out / "vqa.json").write_text(json.dumps([dict(record, image="rotated.jpg")], indent=1) + "\n")
    features = Features({"input": Value("string"), "output": Value("string"), "image": ImageFeature()})
    datasets.Dataset.from_dict({"input": [record["input"]], "output": [record["output"]], "image": [inline(jpeg)]},
                               features=features).to_parquet(str(out / "vqa.parquet"))
    check_inline_images(out / "vqa.parquet", "image", [jpeg])
    # The Image feature may hold a path instead of the bytes: datasets opens the file then, and
    # transposes it all the same.
    path = str((out / "images" / "rotated.jpg").resolve())
    datasets.Dataset.from_dict({"input": [record["input"]], "output": [record["output"]],
                                "image": [{"bytes": None, "path": path}]},
                               features=features).to_parquet(str(out / "vqa_path.parquet"))
    stored = pq.read_table(out / "vqa_path.parquet").column("image").to_pylist()
    if stored != [{"bytes": None, "path": path}]:
        fail(f"vqa_path.parquet holds {stored}, not the image's path alone")


def load_datasets(out, cache_dir):
    transform = reference_transform()
    cache = pathlib.Path(cache_dir)
    built = {
        "cauldron": the_cauldron_dataset(model_transform=transform, source="parquet",
                                         data_files=str(out / "cauldron.parquet"), split="train",
                                         cache_dir=str(cache / "cauldron")),
        "vqa_parquet": vqa_dataset(model_transform=transform, source="parquet", data_files=str(out / "vqa.parquet"),
                                   split="train", cache_dir=str(cache / "vqa_parquet")),
        "vqa_parquet_path": vqa_dataset(model_transform=transform, source="parquet",
                                        data_files=str(out / "vqa_path.parquet"), split="train",
                                        cache_dir=str(cache / "vqa_parquet_path")),
        "vqa_json": vqa_dataset(model_transform=transform, source="json", data_files=str(out / "vqa.json"),
                                image_dir=str(out / "images"), split="train", cache_dir=str(cache / "vqa_json")),
    }
    samples = {name: [ds[i] for i in range(len(ds))] for name, ds in built.items()}
    # The stored images are transposed, the file read by path is not: the tile grids say so.
    rows, cols = ROTATED_JPEG[3]
    expected = {"cauldron": [(rows, cols), ROTATED_PNG[3]], "vqa_parquet": [(rows, cols)],
                "vqa_parquet_path": [(rows, cols)], "vqa_json": [(cols, rows)]}
    for name, grids in expected.items():
        got = [tuple(r.tolist()) for r in samples[name][0]["encoder_input"]["aspect_ratio"]]
        if len(samples[name]) != 1 or got != grids:
            fail(f"{name}: tile grids {got}, expected {grids}")
    return samples


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    out = pathlib.Path(sys.argv[1]) / "exif"
    torch.set_num_threads(1)
    out.mkdir(parents=True, exist_ok=True)
    (out / "references.safetensors").unlink(missing_ok=True)

    refs, case_meta = write_cases(out)
    write_datasets(out)
    with tempfile.TemporaryDirectory() as cache_dir:  # a fresh datasets cache: never a stale one
        samples = load_datasets(out, cache_dir)
    for name, rows in samples.items():
        refs.update(tensors(name, rows))

    meta = {
        "cases": case_meta,
        "datasets": {name: {"samples": len(rows), "images": [len(s["encoder_input"]["images"]) for s in rows]}
                     for name, rows in samples.items()},
        "versions": {"Pillow": PIL.__version__, "datasets": datasets.__version__, "torchtune": torchtune.__version__},
    }
    path = out / "references.safetensors"
    # One metadata entry: safetensors writes the map in hash order (see make_multimodal_data_references).
    save_file(refs, str(path), metadata={"meta": json.dumps(meta, sort_keys=True)})
    back = load_file(str(path))
    if back.keys() != refs.keys() or any(not torch.equal(back[k], v) for k, v in refs.items()):
        fail("references.safetensors does not read back")
    raising = sum(c["raises"] is not None for c in case_meta.values())
    print(f"{out}: {len(case_meta)} images ({raising} that datasets refuses), {len(refs)} tensors; "
          f"Pillow {PIL.__version__}, datasets {datasets.__version__}, torchtune {torchtune.__version__}")


if __name__ == "__main__":
    try:
        main()
    except Exception as error:
        sys.exit(f"make_exif_references: {type(error).__name__}: {error}")
