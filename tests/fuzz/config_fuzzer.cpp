// Fuzz target: the run configuration as the host builds it: TOML text, then command-line
// overrides, then ${...} interpolation. The input is the TOML text, optionally followed by a line
// "---" and one override per line (`optimizer.lr=1e-4`, `~lr_scheduler`).
//
// Every problem in a user's config must surface as ft::Error (the host prints it as a user-facing
// message); any other exception, a crash or a sanitizer report is a bug.
#include <ft/errors.h>
#include "config/config_loader.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct ConfigInput {
  std::string toml;
  std::vector<std::string> overrides;
};

ConfigInput split_input(std::string_view text) {
  static constexpr std::string_view kSeparator = "\n---\n";
  ConfigInput input;
  const auto at = text.find(kSeparator);
  input.toml = std::string(text.substr(0, at));
  if (at == std::string_view::npos) return input;
  std::string_view rest = text.substr(at + kSeparator.size());
  while (!rest.empty()) {
    const auto newline = rest.find('\n');
    const std::string_view line = rest.substr(0, newline);
    if (!line.empty()) input.overrides.emplace_back(line);
    if (newline == std::string_view::npos) break;
    rest.remove_prefix(newline + 1);
  }
  return input;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const ConfigInput input = split_input(std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    auto doc = fthost::load_config_text(input.toml, "fuzz.toml");
    fthost::apply_overrides(*doc, input.overrides);
    fthost::interpolate(*doc);
  } catch (const ft::Error&) {
  }
  return 0;
}
