#!/usr/bin/env python3
"""Images and what torchtune's data path makes of them, for tests/unit/image_test.cpp.

  .venv/bin/python tests/image_references/make_image_references.py OUT_DIR

Pillow writes the images (JPEG, PNG and WebP in the modes datasets carry: RGB, grayscale, palette
with transparency, RGBA, 4-bit grayscale, progressive and 4:4:4 JPEG, lossless and lossy WebP)
from seeded patterns, and reads them back as torchtune does (PIL.Image.open, convert("RGB")).
torchtune's CLIPImageTransform (the image half of llama3_2_vision_transform; it resizes with
torchvision) tiles some of them under several settings. Also written: images fthost must refuse
(CMYK JPEG, 16-bit grayscale PNG, animated WebP, a PNG header of 400M pixels).

Writes OUT_DIR/images/<name>, OUT_DIR/references.safetensors ("decoded.<name>": uint8 [H, W, 3];
"tiles.<case>", "aspect_ratio.<case>"; "canvases.<max_num_tiles>.<tile_size>": int64 [n, 2]),
OUT_DIR/cases.json (each case's image and settings) and OUT_DIR/versions.json.

Collation (OUT_DIR/collate_cases.json; tensors "collate.<case>.*"): samples of token ids with
image tokens and random tiles go through torchtune's VisionCrossAttentionMask and
padded_collate_tiled_images_and_mask. torchtune lays a sample's masks out as [images, text,
tiles x tokens] and then views that memory as [text, images x tiles x tokens], which mixes the
rows of different images when a sample has more than one; "collate.<case>.model_encoder_mask" is
the layout the model reads (Hugging Face's Mllama: text first, then each image's tiles), made here
from torchtune's per-image masks.
"""
import json
import pathlib
import struct
import sys
import zlib

import numpy as np
import PIL
import PIL.features
import torch
import torchtune
import torchvision
from PIL import Image
from safetensors.torch import save_file
from torchtune.data import padded_collate_tiled_images_and_mask
from torchtune.models.clip._transform import CLIPImageTransform
from torchtune.modules.transforms import VisionCrossAttentionMask
from torchtune.modules.transforms.vision_utils.get_canvas_best_fit import find_supported_resolutions

# llama3_2_vision_transform's normalisation (CLIP's mean and std).
CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


def pattern(height, width, seed):
    """Gradients with noise: something for resizing to average and for JPEG to approximate."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack(
        [x * 255 // max(width - 1, 1), y * 255 // max(height - 1, 1), (x + y) * 127 // max(height + width - 2, 1)], -1
    )
    noise = rng.integers(-40, 41, size=(height, width, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def write_images(directory):
    rgb = Image.fromarray(pattern(200, 300, 1))
    images = {}

    def save(name, image, **options):
        image.save(directory / name, **options)
        images[name] = directory / name

    save("rgb_300x200.png", rgb)
    save("rgb_300x200.jpg", rgb, quality=90)
    save("rgb_300x200_444.jpg", rgb, quality=75, subsampling=0)
    save("rgb_300x200_progressive.jpg", rgb, quality=85, progressive=True)
    save("gray_97x61.jpg", Image.fromarray(pattern(61, 97, 2)).convert("L"), quality=92)
    save("rgb_300x200_lossless.webp", rgb, lossless=True)
    save("rgb_300x200_lossy.webp", rgb, quality=80)
    rgba = Image.fromarray(pattern(48, 64, 3)).convert("RGBA")
    rgba.putalpha(Image.fromarray(pattern(48, 64, 4)[:, :, 0]))
    save("rgba_64x48.png", rgba)
    save("rgba_64x48_lossless.webp", rgba, lossless=True, exact=True)
    palette = Image.fromarray(pattern(40, 50, 5)).quantize(colors=37)
    save("palette_50x40.png", palette, transparency=3)
    save("gray4_45x33.png", Image.fromarray(pattern(33, 45, 6)).convert("L"), bits=4)
    save("exact_128x64.png", Image.fromarray(pattern(64, 128, 7)))
    return images


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def write_refused(directory):
    # A header claiming 20000 x 20000 RGB pixels (PIL: DecompressionBombError) and one row's data.
    ihdr = struct.pack(">IIBBBBB", 20000, 20000, 8, 2, 0, 0, 0)
    idat = zlib.compress(bytes(1 + 3 * 20000))
    (directory / "bomb.png").write_bytes(
        b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", idat) + png_chunk(b"IEND", b"")
    )
    Image.fromarray(pattern(20, 30, 8)).convert("CMYK").save(directory / "cmyk.jpg")
    gray16 = np.asarray(Image.fromarray(pattern(20, 30, 9)).convert("L"), dtype=np.uint16) * 257
    Image.fromarray(gray16).save(directory / "gray16.png")
    frames = [Image.fromarray(pattern(20, 30, seed)) for seed in (10, 11)]
    frames[0].save(directory / "animated.webp", save_all=True, append_images=frames[1:], duration=100, loop=0)


# name: image, tile_size, max_num_tiles, resize_to_max_canvas, dtype, normalised
CASES = {
    "downscale_bf16": ("rgb_300x200.png", 64, 4, False, "bfloat16", True),
    "downscale_jpeg_bf16": ("rgb_300x200.jpg", 64, 4, False, "bfloat16", True),
    "upscale_capped_f32": ("gray_97x61.jpg", 32, 6, False, "float32", True),
    "resize_to_max_canvas_bf16": ("palette_50x40.png", 32, 4, True, "bfloat16", True),
    "unnormalised_f32": ("rgba_64x48.png", 16, 8, False, "float32", False),
    "exact_fit_bf16": ("exact_128x64.png", 64, 2, False, "bfloat16", True),
    "lossy_webp_bf16": ("rgb_300x200_lossy.webp", 112, 3, False, "bfloat16", True),
}


IMAGE_TOKEN = 99
TILE, PATCH = 4, 2
TOKENS_PER_TILE = (TILE // PATCH) ** 2 + 1  # 4 patches and the CLS token
# name: samples as (token ids, tiles per image), pad_direction, pad_max_tiles, pad_max_images
COLLATE_CASES = {
    "right_multi_image": (
        [([IMAGE_TOKEN, 5, 6, 7], [2]), ([IMAGE_TOKEN, 8, IMAGE_TOKEN, IMAGE_TOKEN, 9, 10, 11], [1, 3, 2])],
        "right", None, None,
    ),
    "right_padded_tiles_and_images": (
        [([3, IMAGE_TOKEN, 5, 6, 7, 8], [2]), ([IMAGE_TOKEN, 8, 9], [1])],
        "right", 4, 3,
    ),
    "left_generation": (
        [([IMAGE_TOKEN, 5], [3]), ([4, IMAGE_TOKEN, 5, 6, 7], [1])],
        "left", 4, None,
    ),
}


def collate_references(tensors):
    gen = torch.Generator().manual_seed(5)
    mask_transform = VisionCrossAttentionMask(tile_size=TILE, patch_size=PATCH, image_token_id=IMAGE_TOKEN)
    described = {}
    for case, (samples, direction, pad_max_tiles, pad_max_images) in COLLATE_CASES.items():
        batch = []
        for i, (tokens, tiles) in enumerate(samples):
            images = [torch.randn(n, 3, TILE, TILE, generator=gen) for n in tiles]
            aspect = [torch.tensor([1, n], dtype=torch.int64) for n in tiles]
            labels = [t if j % 3 else -100 for j, t in enumerate(tokens)]
            sample = {"tokens": tokens, "labels": labels, "encoder_input": {"images": images, "aspect_ratio": aspect}}
            sample = mask_transform(sample)
            prefix = f"collate.{case}.sample{i}"
            tensors[f"{prefix}.tokens"] = torch.tensor(tokens, dtype=torch.int64)
            tensors[f"{prefix}.labels"] = torch.tensor(labels, dtype=torch.int64)
            for k, (image, mask) in enumerate(zip(images, sample["encoder_mask"])):
                tensors[f"{prefix}.image{k}"] = image
                tensors[f"{prefix}.aspect{k}"] = aspect[k]
                tensors[f"{prefix}.mask{k}"] = mask
            batch.append(sample)
        collated = padded_collate_tiled_images_and_mask(
            batch, padding_idx=0, ignore_idx=-100, pad_direction=direction,
            pad_max_tiles=pad_max_tiles, pad_max_images=pad_max_images,
        )
        prefix = f"collate.{case}"
        tensors[f"{prefix}.tokens"] = collated["tokens"]
        if "labels" in collated:
            tensors[f"{prefix}.labels"] = collated["labels"]
        tensors[f"{prefix}.images"] = collated["encoder_input"]["images"].contiguous()
        tensors[f"{prefix}.aspect_ratio"] = collated["encoder_input"]["aspect_ratio"]
        tensors[f"{prefix}.torchtune_encoder_mask"] = collated["encoder_mask"].contiguous()
        # The model's layout from torchtune's per-image masks: image k's columns at k x max_tiles x 5.
        b, s = collated["tokens"].shape
        max_tiles = collated["encoder_input"]["images"].shape[2]
        n_images = pad_max_images or collated["encoder_input"]["images"].shape[1]
        width = max_tiles * TOKENS_PER_TILE
        model_mask = torch.zeros(b, s, n_images * width, dtype=torch.bool)
        for i, sample in enumerate(batch):
            length = len(sample["tokens"])
            row = 0 if direction == "right" else s - length
            for k, mask in enumerate(sample["encoder_mask"]):
                model_mask[i, row : row + length, k * width : k * width + mask.shape[1]] = mask
        tensors[f"{prefix}.model_encoder_mask"] = model_mask
        described[case] = {
            "tiles_per_image": [tiles for _, tiles in samples],
            "pad_direction": direction,
            "pad_max_tiles": pad_max_tiles,
            "pad_max_images": pad_max_images,
        }
    tensors["intervals.docstring"] = torch.tensor(
        VisionCrossAttentionMask(tile_size=400, patch_size=40, image_token_id=1)._get_image_attention_intervals(
            [1, 1, 9673, 527, 1403, 12875, 13, 1, 1115, 374, 264, 8415]
        ),
        dtype=torch.int64,
    )
    return described


def main():
    out = pathlib.Path(sys.argv[1])
    image_dir = out / "images"
    image_dir.mkdir(parents=True, exist_ok=True)
    images = write_images(image_dir)
    write_refused(image_dir)

    tensors = {}
    for name, path in images.items():
        with Image.open(path) as image:
            tensors[f"decoded.{name}"] = torch.from_numpy(np.asarray(image.convert("RGB")).copy())
    for max_num_tiles, tile_size in ((4, 224), (8, 560), (6, 32), (1, 16)):
        canvases = find_supported_resolutions(max_num_tiles=max_num_tiles, tile_size=tile_size)
        tensors[f"canvases.{max_num_tiles}.{tile_size}"] = torch.tensor(canvases, dtype=torch.int64).reshape(-1, 2)

    cases = {}
    for case, (name, tile_size, max_num_tiles, to_max, dtype, normalised) in CASES.items():
        transform = CLIPImageTransform(
            image_mean=CLIP_MEAN if normalised else None,
            image_std=CLIP_STD if normalised else None,
            tile_size=tile_size,
            possible_resolutions=None,
            max_num_tiles=max_num_tiles,
            resample="bilinear",
            resize_to_max_canvas=to_max,
            dtype=getattr(torch, dtype),
        )
        with Image.open(images[name]) as image:
            result = transform({"image": image})
        tensors[f"tiles.{case}"] = result["image"].contiguous()
        tensors[f"aspect_ratio.{case}"] = result["aspect_ratio"].to(torch.int64)
        cases[case] = {
            "image": name,
            "tile_size": tile_size,
            "max_num_tiles": max_num_tiles,
            "resize_to_max_canvas": to_max,
            "dtype": dtype,
            "mean": CLIP_MEAN if normalised else [],
            "std": CLIP_STD if normalised else [],
        }

    collate_cases = collate_references(tensors)
    save_file(tensors, str(out / "references.safetensors"))
    (out / "collate_cases.json").write_text(
        json.dumps({"image_token": IMAGE_TOKEN, "patches_per_tile": (TILE // PATCH) ** 2, "cases": collate_cases}, indent=1)
    )
    (out / "cases.json").write_text(json.dumps(cases, indent=1))
    (out / "versions.json").write_text(
        json.dumps(
            {
                "torch": torch.__version__,
                "torchvision": torchvision.__version__,
                "torchtune": torchtune.__version__,
                "Pillow": PIL.__version__,
                "libjpeg_turbo": PIL.features.version("libjpeg_turbo"),
                "libwebp": PIL.features.version("webp"),
                "zlib": PIL.features.version("zlib"),
            }
        )
    )


if __name__ == "__main__":
    main()
