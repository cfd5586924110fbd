#include "train/training_commands.h"

#include "config/checked_config.h"
#include "config/distributed_environment.h"
#include "config/rank_logging.h"
#include "plan/plan_command.h"
#include "train/data_command.h"
#include "train/device_support.h"
#include "train/full_finetune_recipe.h"

#include <ft/log.h>

#include <boost/filesystem.hpp>

#include <fstream>

namespace fthost {

int run_training_command(const Invocation& inv) {
  check_invocation(inv);
  if (inv.command == "plan") {
    log_to_stderr();  // stdout is the plan
    if (!inv.plan.seq_len_from_data) return run_plan_command(inv);
    // The data is read once, as one rank of the run reads it, for its longest sample.
    CheckedConfig checked = load_checked_config(inv, PluginLoader(PluginLoader::Manifests::Ignore));
    const auto [longest, samples] = longest_training_sample(checked.plugins.registry(), checked.root, checked.settings);
    if (longest == 0) throw ft::ConfigError("--seq-len data: the dataset has no tokens to plan for");
    Invocation planned = inv;
    planned.plan.seq_len = longest;
    planned.plan.seq_len_source = "the longest of the dataset's " + std::to_string(samples) + " samples";
    return run_plan_command(planned);
  }
  if (inv.command == "data") log_to_stderr();  // stdout is the data view
  std::function<void(ft::detail::ConfigDocument&)> adjust;
  if (inv.command == "data" && inv.data.packed) adjust = set_datasets_packed;
  CheckedConfig checked = load_checked_config(inv, PluginLoader(PluginLoader::Manifests::Ignore), adjust);
  const ft::ConfigNode& root = checked.root;
  const TrainingSettings& settings = checked.settings;
  resolve_device(root);  // the devices this process sees, which validation does not ask LibTorch for
  if (inv.command == "data") return show_data(checked.plugins.registry(), root, settings, inv.data);
  const DistributedEnvironment env = read_distributed_environment();
  configure_rank_logging(env.rank, env.world_size);
  return run_full_finetune(checked.plugins.registry(), root, settings, [&](const TrainingSettings& run) {
    if (env.rank != 0) return;
    // The seed the run goes on with is written down, so the effective config repeats the run:
    // a drawn one, or a resumed checkpoint's, which replaces a drawn or a different one.
    checked.doc->root().insert_or_assign("seed", static_cast<std::int64_t>(run.seed));
    boost::filesystem::create_directories(settings.output_dir);
    const std::string effective = root.to_toml();
    ft::log::info("effective config:\n{}", effective);
    std::ofstream f(settings.output_dir + "/config.effective.toml");
    f << effective << "\n";
  });
}

}  // namespace fthost
