#include "config/invocation.h"

#include <ft/errors.h>

namespace fthost {

void check_invocation(const Invocation& inv) {
  if (inv.command != "data" && (inv.data.samples || inv.data.packed))
    throw ft::ConfigError("--samples and --packed are options of `fthost data`");
  if (inv.data.json && inv.command != "data" && inv.command != "plan")
    throw ft::ConfigError("--json is an option of `fthost data` and `fthost plan`");
  if (inv.strict && inv.command != "validate") throw ft::ConfigError("--strict is an option of `fthost validate`");
  if (!inv.write_manifest.empty() && inv.command != "plugins")
    throw ft::ConfigError("--write-manifest is an option of `fthost plugins`");
  if (is_training_command(inv) && inv.config_path.empty())
    throw ft::ConfigError("--config: required (a run configuration in TOML or YAML, or a shipped config's name)");
}

bool is_training_command(const Invocation& inv) {
  return inv.command == "run" || inv.command == "data" || inv.command == "plan";
}

}  // namespace fthost
