#!/usr/bin/env python3
"""Images/s of the vision data path alone (decode + tile), fthost against torchtune. Not a test.

  .venv/bin/python bench/image_data.py [--count 64] [--size 1024x768] [--tile 560] [--tiles 4] [--repeats 3]

Writes --count JPEGs (quality 90, gradients with noise) to a temporary directory, then, in
interleaved rounds, runs build/bin/fthost_image_bench (plugins/datasets/images) and torchtune's
own path (PIL.Image.open and CLIPImageTransform as llama3_2_vision_transform builds it, bfloat16),
each with 0 and 2 workers (fthost: threads; torchtune: a torch DataLoader's processes). Prints
each side's median images/s and fthost's ratio to torchtune's. Run uptime first and nothing else
beside it.
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import tempfile
import time

import numpy as np
import torch
from PIL import Image
from torchtune.models.clip._transform import CLIPImageTransform

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCH = ROOT / "build" / "bin" / "fthost_image_bench"
MEAN = [0.48145466, 0.4578275, 0.40821073]
STD = [0.26862954, 0.26130258, 0.27577711]


def write_images(directory, count, width, height):
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:height, 0:width]
    for i in range(count):
        base = np.stack([(x * (i + 1)) % 256, (y * 3 + i) % 256, ((x + y) // 2) % 256], -1)
        noise = rng.integers(-30, 31, size=(height, width, 3))
        pixels = np.clip(base + noise, 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(directory / f"{i:04d}.jpg", quality=90)


class Images(torch.utils.data.Dataset):
    def __init__(self, files, transform):
        self.files, self.transform = files, transform

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with Image.open(self.files[i]) as image:
            return self.transform({"image": image})["image"]


def torchtune_rate(files, transform, workers):
    loader = torch.utils.data.DataLoader(Images(files, transform), batch_size=None, num_workers=workers)
    start = time.perf_counter()
    for _ in loader:
        pass
    return len(files) / (time.perf_counter() - start)


def fthost_rate(directory, tile, tiles, workers):
    out = subprocess.run([str(BENCH), str(directory), str(tile), str(tiles), str(workers), "1"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])["images_per_second"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=64)
    parser.add_argument("--size", default="1024x768")
    parser.add_argument("--tile", type=int, default=560)
    parser.add_argument("--tiles", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    transform = CLIPImageTransform(image_mean=MEAN, image_std=STD, tile_size=args.tile, possible_resolutions=None,
                                   max_num_tiles=args.tiles, resample="bilinear", resize_to_max_canvas=False)
    with tempfile.TemporaryDirectory(prefix="fthost-images-") as tmp:
        directory = pathlib.Path(tmp)
        write_images(directory, args.count, width, height)
        files = sorted(str(p) for p in directory.iterdir())
        rates = {}
        for _ in range(args.repeats):
            for workers in (0, 2):
                rates.setdefault(("fthost", workers), []).append(fthost_rate(directory, args.tile, args.tiles, workers))
                rates.setdefault(("torchtune", workers), []).append(torchtune_rate(files, transform, workers))
    print(f"{args.count} JPEGs of {width}x{height}, tiles of {args.tile}, at most {args.tiles}; "
          f"median of {args.repeats} interleaved rounds")
    for workers in (0, 2):
        ours = statistics.median(rates[("fthost", workers)])
        theirs = statistics.median(rates[("torchtune", workers)])
        print(f"workers {workers}: fthost {ours:7.1f} images/s, torchtune {theirs:7.1f} images/s, "
              f"ratio {ours / theirs:.2f}x")


if __name__ == "__main__":
    main()
