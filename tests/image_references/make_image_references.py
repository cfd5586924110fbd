#!/usr/bin/env python3
"""Images and what torchtune's data path makes of them, for tests/unit/image_test.cpp.

  .venv/bin/python tests/image_references/make_image_references.py OUT_DIR

Pillow writes the images (JPEG, PNG and WebP in the modes datasets carry: RGB, grayscale, palette
with transparency, RGBA, 4-bit grayscale, progressive and 4:4:4 JPEG, lossless and lossy WebP)
from seeded patterns, and reads them back as torchtune does (PIL.Image.open, convert("RGB")).
torchtune's CLIPImageTransform (the image half of llama3_2_vision_transform; it resizes with
torchvision) tiles some of them under several settings. Also written: images fthost must refuse
(CMYK JPEG, 16-bit grayscale PNG, animated WebP).

Writes OUT_DIR/images/<name>, OUT_DIR/references.safetensors ("decoded.<name>": uint8 [H, W, 3];
"tiles.<case>", "aspect_ratio.<case>"; "canvases.<max_num_tiles>.<tile_size>": int64 [n, 2]),
OUT_DIR/cases.json (each case's image and settings) and OUT_DIR/versions.json.
"""
import json
import pathlib
import sys

import numpy as np
import PIL
import PIL.features
import torch
import torchtune
import torchvision
from PIL import Image
from safetensors.torch import save_file
from torchtune.models.clip._transform import CLIPImageTransform
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


def write_refused(directory):
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

    save_file(tensors, str(out / "references.safetensors"))
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
