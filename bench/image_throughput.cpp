// The image half of the vision data path, alone (not a test: prints numbers): every image file in
// a directory read, decoded (plugins/datasets/images) and tiled as llama3_2_vision_transform does
// (bfloat16, CLIP's mean and std), by `workers` threads (0: the calling thread), `repeats` times.
//   fthost_image_bench DIR [tile_size=560] [max_num_tiles=4] [workers=0] [repeats=3]
// Prints one JSON line per repeat: {"images": n, "seconds": s, "images_per_second": r}.
// bench/image_data.py writes the images and runs this beside torchtune's own transform.
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <boost/filesystem.hpp>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "image_decoding.h"
#include "tiled_image_transform.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: fthost_image_bench DIR [tile_size] [max_num_tiles] [workers] [repeats]\n";
    return 2;
  }
  const std::string dir = argv[1];
  const std::int64_t tile_size = argc > 2 ? std::atoll(argv[2]) : 560;
  const std::int64_t max_num_tiles = argc > 3 ? std::atoll(argv[3]) : 4;
  const int workers = argc > 4 ? std::atoi(argv[4]) : 0;
  const int repeats = argc > 5 ? std::atoi(argv[5]) : 3;
  std::vector<std::string> files;
  for (const auto& entry : boost::filesystem::directory_iterator(dir))
    if (boost::filesystem::is_regular_file(entry)) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::cerr << "fthost_image_bench: no files in " << dir << "\n";
    return 2;
  }
  // As a data-loader worker would: one intra-op thread per worker, so workers do not oversubscribe.
  if (workers > 0) at::set_num_threads(1);

  ft_images::TiledImageSettings settings;
  settings.tile_size = tile_size;
  settings.max_num_tiles = max_num_tiles;
  settings.mean = {0.48145466, 0.4578275, 0.40821073};
  settings.std = {0.26862954, 0.26130258, 0.27577711};
  const ft_images::TiledImageTransform transform(settings);

  for (int r = 0; r < repeats; ++r) {
    std::atomic<std::size_t> next{0};
    std::atomic<std::int64_t> tiles{0};
    const auto work = [&] {
      for (std::size_t i = next++; i < files.size(); i = next++) {
        const auto tiled = transform(ft_images::read_image_file(files[i], ft_images::ExifOrientation::ignore));
        tiles += tiled.tiles.size(0);
      }
    };
    const auto start = std::chrono::steady_clock::now();
    if (workers == 0) {
      work();
    } else {
      std::vector<std::thread> threads;
      for (int w = 0; w < workers; ++w) threads.emplace_back(work);
      for (auto& t : threads) t.join();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "{\"images\": " << files.size() << ", \"tiles\": " << tiles.load() << ", \"seconds\": " << seconds
              << ", \"images_per_second\": " << static_cast<double>(files.size()) / seconds << "}\n";
  }
  return 0;
}
