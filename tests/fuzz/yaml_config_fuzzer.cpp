// Fuzz target: a YAML run configuration as the host builds it: YAML text (torchtune's format),
// then command-line overrides, then ${...} interpolation. The input is the YAML text, optionally
// followed by a line "#---" and one override per line (`optimizer.lr=1e-4`, `~lr_scheduler`).
//
// Every problem in a user's config must surface as ft::Error (the host prints it as a user-facing
// message); any other exception, a crash or a sanitizer report is a bug.
#include <ft/errors.h>
#include "config/config_loader.h"
#include "config/yaml_config.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // "#---" is a YAML comment, so a corpus file stays a valid YAML file.
  static constexpr std::string_view kSeparator = "\n#---\n";
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto at = text.find(kSeparator);
  std::vector<std::string> overrides;
  if (at != std::string_view::npos) {
    std::string_view rest = text.substr(at + kSeparator.size());
    while (!rest.empty()) {
      const auto newline = rest.find('\n');
      if (newline != 0) overrides.emplace_back(rest.substr(0, newline));
      if (newline == std::string_view::npos) break;
      rest.remove_prefix(newline + 1);
    }
  }
  try {
    auto doc = fthost::load_yaml_config_text(std::string(text.substr(0, at)), "fuzz.yaml");
    fthost::apply_overrides(*doc, overrides);
    fthost::interpolate(*doc);
  } catch (const ft::Error&) {
  }
  return 0;
}
