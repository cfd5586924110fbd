// main() for fuzz targets in builds without libFuzzer: runs LLVMFuzzerTestOneInput once on every
// file named on the command line (directories are walked), so ctest replays the seed corpus and
// the inputs of past crashes in the ordinary and sanitizer builds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::size_t replay_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << path.string() << ": cannot open\n";
    std::exit(2);
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(arg))
        if (entry.is_regular_file()) replayed += replay_file(entry.path());
    } else {
      replayed += replay_file(arg);
    }
  }
  if (replayed == 0) {
    std::cerr << "no inputs to replay\n";
    return 2;
  }
  std::cout << "replayed " << replayed << " inputs\n";
  return 0;
}
