// The fthost command line: options, help, version, the local launcher, and where each command
// runs: ls, plugins, cp and validate here, run, data and generate in the training code.
#include "cli/command_line.h"

#include "cli/local_launcher.h"
#include "config/checked_config.h"
#include "config/recipe_names.h"

#include <ft/errors.h>

#include <boost/program_options.hpp>

#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace fthost {

namespace po = boost::program_options;

namespace {

po::options_description data_options() {
  po::options_description data("Options of `fthost data` (docs/data.md)");
  data.add_options()("samples", po::value<std::int64_t>(), "samples to show (default: 3; with --json: all)")(
      "packed", po::bool_switch(), "pack the datasets (dataset.packed = true)")(
      "json", po::bool_switch(), "one JSON object per sample (ids, labels), then the statistics");
  return data;
}

po::options_description visible_options() {
  po::options_description visible(
      "Usage:\n"
      "  fthost --config run.toml [key=value ...] [~key ...]   train\n"
      "  fthost --nproc-per-node N --config run.toml ...      train on N local ranks\n"
      "  fthost validate --config run.toml [overrides]        check every component, no training\n"
      "                                                        (or `fthost validate run.toml`, as tune's)\n"
      "  fthost data --config run.toml [overrides] [--samples N] [--packed] [--json]\n"
      "                                                        show the tokenized training data and its masks\n"
      "  fthost generate --checkpoint DIR --prompt TEXT       generate text (fthost generate --help)\n"
      "  fthost ls [KIND] [-v]                                 list components (with -v: schemas)\n"
      "  fthost plugins                                        list plugin libraries\n"
      "  fthost ls configs                                     list the shipped configs\n"
      "  fthost cp CONFIG DEST [--force] [--make-parents]      copy a shipped config or a config file;\n"
      "                                                        YAML to a .toml DEST is translated\n"
      "  fthost run [--nproc_per_node N] full_finetune_distributed --config X [overrides]\n"
      "                                                        torchtune's `tune run` spelling\n"
      "Configs are TOML or torchtune's YAML (.yaml, .yml); --config also takes a shipped config's\n"
      "name (qwen2_5/0.5B_full). Overrides: key=value (TOML or YAML value; null/None removes the key),\n"
      "~key (remove).\n\n"
      "Options");
  visible.add_options()("help,h", "show this help")("version", "print the version and build fingerprint")(
      "config,c", po::value<std::string>(), "run configuration (TOML or YAML), or a shipped config's name")(
      "plugin-dir", po::value<std::vector<std::string>>()->composing(),
      "extra plugin directory or library (repeatable)")("verbose,v", po::bool_switch(), "ls: show schemas")(
      "nproc-per-node", po::value<int>(), "start N ranks on this machine (distributed training)")(
      "nproc_per_node", po::value<int>(), "the same, as torchtune spells it")("force", po::bool_switch(),
                                                                              "cp: overwrite an existing destination")(
      "make-parents", po::bool_switch(), "cp: create the destination's missing directories")(
      "write-manifest", po::value<std::string>(),
      "plugins: write LIB.manifest.json for the plugin library LIB (what ls and validate read instead of loading it)");
  visible.add(data_options());
  return visible;
}

// `fthost --nproc-per-node N ...`: the same command line, without the option (either spelling),
// for each rank.
int launch_local(int argc, char** argv, int nproc, const Invocation& inv) {
  if (std::getenv("RANK")) {
    std::cerr << "fthost: error: --nproc-per-node: this process is already rank " << std::getenv("RANK")
              << " of a launched job; give --nproc-per-node to the outer command only\n";
    return 2;
  }
  // Every rank would load the config and print the same error: it is checked once, here, before
  // any rank starts (its errors reach run_command_line's one message). `data --packed` edits the
  // datasets in the training library first, so its ranks check what they read themselves.
  if (nproc >= 1 && is_training_command(inv) && !(inv.command == "data" && inv.data.packed)) {
    check_invocation(inv);
    check_config_before_launch(inv, nproc);
  }
  std::vector<std::string> rank_args;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--nproc-per-node" || a == "--nproc_per_node") {
      ++i;
      continue;
    }
    if (a.rfind("--nproc-per-node=", 0) == 0 || a.rfind("--nproc_per_node=", 0) == 0) continue;
    rank_args.push_back(a);
  }
  try {
    return launch_local_ranks(nproc, rank_args);
  } catch (const ft::Error& e) {
    std::cerr << "fthost: error: " << e.what() << "\n";
    return 2;
  }
}

Invocation invocation_of(const po::variables_map& vm) {
  Invocation inv;
  if (vm.count("config")) inv.config_path = vm["config"].as<std::string>();
  if (vm.count("plugin-dir")) inv.plugin_dirs = vm["plugin-dir"].as<std::vector<std::string>>();
  inv.verbose = vm["verbose"].as<bool>();
  if (vm.count("samples")) inv.data.samples = vm["samples"].as<std::int64_t>();
  inv.data.packed = vm["packed"].as<bool>();
  inv.data.json = vm["json"].as<bool>();
  inv.force = vm["force"].as<bool>();
  inv.make_parents = vm["make-parents"].as<bool>();
  if (vm.count("write-manifest")) inv.write_manifest = vm["write-manifest"].as<std::string>();
  std::vector<std::string> args;
  if (vm.count("args")) args = vm["args"].as<std::vector<std::string>>();
  if (!args.empty() && (args[0] == "ls" || args[0] == "plugins" || args[0] == "validate" || args[0] == "run" ||
                        args[0] == "data" || args[0] == "cp")) {
    inv.command = args[0];
    args.erase(args.begin());
  }
  if (inv.command == "run" && !args.empty() && is_recipe_argument(args[0])) {
    check_recipe_name(args[0]);
    args.erase(args.begin());
  }
  // `tune validate my.yaml` names the config without --config.
  if (inv.command == "validate" && inv.config_path.empty() && !args.empty() && is_recipe_argument(args[0])) {
    inv.config_path = args[0];
    args.erase(args.begin());
  }
  inv.args = std::move(args);
  return inv;
}

// The launcher's rank count from either spelling, if given.
std::optional<int> nproc_per_node(const po::variables_map& vm) {
  if (vm.count("nproc-per-node") && vm.count("nproc_per_node"))
    throw ft::Error("--nproc-per-node and --nproc_per_node are the same option; give it once");
  if (vm.count("nproc-per-node")) return vm["nproc-per-node"].as<int>();
  if (vm.count("nproc_per_node")) return vm["nproc_per_node"].as<int>();
  return std::nullopt;
}

}  // namespace

int run_command_line(int argc, char** argv, const TrainingCommands& training) {
  if (argc > 1 && std::string(argv[1]) == "generate") return training.generate(argc, argv);

  const po::options_description visible = visible_options();
  po::options_description hidden;
  hidden.add_options()("args", po::value<std::vector<std::string>>(), "");
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description positional;
  positional.add("args", -1);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "fthost: " << e.what() << "\n" << visible << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << visible << "\n";
    return 0;
  }
  if (vm.count("version")) {
    std::cout << version_text() << "\n";
    return 0;
  }
  try {
    // The command is checked before ranks start, so a mistake is reported once.
    const Invocation inv = invocation_of(vm);
    if (const auto nproc = nproc_per_node(vm)) return launch_local(argc, argv, *nproc, inv);
    if (is_training_command(inv)) {
      check_invocation(inv);
      return training.run_or_data(argc, argv, inv);
    }
    return dispatch(inv);
  } catch (const ft::Error& e) {
    std::cerr << "fthost: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "fthost: internal error: " << e.what() << "\n";
    return 3;
  }
}

}  // namespace fthost
