// Tokenizer and packing throughput, through the real plugins (not a test: prints numbers).
//   fthost_text_data_bench [fixtures_dir]     (default $FT_FIXTURES, else ../shared/fixtures)
// - encode tokens/s of each fixture tokenizer.json on tinyshakespeare.txt, whole file (warm
//   word cache after the first pass) and line by line on a fresh tokenizer (cold cache);
// - packing samples/s: Alpaca records (the fixture's 100, repeated to 10,000) tokenized in the
//   Llama 3 chat format and packed into 2048-token packs.
#include "config/config_loader.h"
#include "plugin_host/plugin_loader.h"

#include <ft/dataset.h>
#include <ft/tokenizer.h>

#include <boost/filesystem.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ft::ConfigNode table(const std::string& name, const std::string& toml) {
  auto path = boost::filesystem::temp_directory_path() / boost::filesystem::unique_path("fthost-bench-%%%%%%.toml");
  std::ofstream(path.string()) << toml;
  auto root = ft::detail::root_node(fthost::load_config(path.string(), {}));
  return root.table(name);
}

}  // namespace

int main(int argc, char** argv) {
  std::string fixtures = argc > 1 ? argv[1]
                                  : (std::getenv("FT_FIXTURES") ? std::getenv("FT_FIXTURES")
                                                                : std::string(FT_SOURCE_DIR) + "/../shared/fixtures");
  fthost::PluginLoader loader;
  loader.load_all({{FT_BUILTIN_PLUGIN_DIR, "default"}});
  const std::string text = read(fixtures + "/data/tinyshakespeare.txt");
  std::vector<std::string> lines;
  {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) lines.push_back(l + "\n");
  }
  std::cout << "tinyshakespeare.txt: " << text.size() << " bytes, " << lines.size() << " lines\n";
  const std::pair<const char*, const char*> families[] = {{"llama3", "torchtune.models.llama3.llama3_tokenizer"},
                                                          {"qwen3", "torchtune.models.qwen2_5.qwen2_5_tokenizer"},
                                                          {"llama2", "torchtune.models.llama2.llama2_tokenizer"}};
  for (const auto& [dir, component] : families) {
    const std::string toml = "[tokenizer]\n_component_ = \"" + std::string(component) + "\"\npath = \"" + fixtures +
                             "/tokenizers/" + dir + "/tokenizer.json\"\n";
    auto t0 = Clock::now();
    auto cold = loader.registry().instantiate<ft::Tokenizer>(table("tokenizer", toml));
    const double load = since(t0);
    t0 = Clock::now();
    std::size_t cold_tokens = 0;
    for (const auto& l : lines) cold_tokens += cold->encode(l, false, false).size();
    const double cold_s = since(t0);
    auto tok = loader.registry().instantiate<ft::Tokenizer>(table("tokenizer", toml));
    double best = 1e30;
    std::size_t n = 0;
    for (int rep = 0; rep < 3; ++rep) {
      t0 = Clock::now();
      n = tok->encode(text, false, false).size();
      best = std::min(best, since(t0));
    }
    const auto ids = tok->encode(text, false, false);
    t0 = Clock::now();
    const auto back = tok->decode(ids);
    const double decode_s = since(t0);
    std::cout << dir << ": load " << load << " s; encode line by line (cold cache) " << cold_tokens / cold_s / 1e6
              << " M tokens/s; whole file " << n << " tokens, " << n / best / 1e6 << " M tokens/s ("
              << text.size() / best / 1e6 << " MB/s); decode " << ids.size() / decode_s / 1e6 << " M tokens/s"
              << (back == text ? "" : " (ROUND TRIP DIFFERS)") << "\n";
  }

  // Packing: 10,000 Alpaca records.
  const std::string alpaca = read(fixtures + "/data/alpaca_tiny.json");
  auto data_path =
      boost::filesystem::temp_directory_path() / boost::filesystem::unique_path("fthost-bench-%%%%%%.jsonl");
  {
    std::ofstream out(data_path.string());
    std::string body = alpaca.substr(alpaca.find('[') + 1, alpaca.rfind(']') - alpaca.find('[') - 1);
    out << "[";
    for (int i = 0; i < 100; ++i) out << (i ? "," : "") << body;
    out << "]";
  }
  auto tok = loader.registry().instantiate<ft::Tokenizer>(
      table("tokenizer", "[tokenizer]\n_component_ = \"torchtune.models.llama3.llama3_tokenizer\"\npath = \"" +
                             fixtures + "/tokenizers/llama3/tokenizer.json\"\nmax_seq_len = 2048\n"));
  auto t0 = Clock::now();
  auto packed = loader.registry().instantiate<ft::Dataset>(
      table("dataset", "[dataset]\n_component_ = \"torchtune.datasets.alpaca_dataset\"\nsource = \"" +
                           data_path.string() + "\"\npacked = true\n"),
      {tok});
  const double pack_s = since(t0);
  std::cout << "packing: 10000 Alpaca samples into " << packed->size() << " packs of 2048 in " << pack_s
            << " s: " << 10000 / pack_s << " samples/s (load, tokenize and pack)\n";
  boost::filesystem::remove(data_path);
}
