// The fthost command line: options, help, version, the local launcher, and where each command
// runs: ls, plugins, cp and validate here, run, data and generate in the training code.
#include "cli/command_line.h"

#include "cli/local_launcher.h"
#include "config/byte_size.h"
#include "config/checked_config.h"
#include "config/recipe_names.h"

#include <ft/errors.h>

#include <boost/program_options.hpp>

#include <algorithm>
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

po::options_description plan_options() {
  po::options_description plan("Options of `fthost plan` (docs/plan.md; also --nproc-per-node, --nnodes, --json)");
  plan.add_options()("device", po::value<std::string>(), "plan for this GPU's datasheet (h100, a100, ...)")(
      "device-memory", po::value<std::string>(), "memory per device to fit in (80GiB); default: the device's")(
      "seq-len", po::value<std::string>(),
      "tokens per sequence, or `data`: the dataset's longest sample (default: the longest the config admits)")(
      "images-per-sample", po::value<std::int64_t>(),
      "images in each sample, for a model that reads images (default 1; 0: text alone)")(
      "tiles-per-image", po::value<std::int64_t>(),
      "tiles of each image (default: the tokenizer's max_num_tiles, else the model's)")(
      "mfu", po::value<double>(), "share of the peak FLOP/s the step time assumes (default 0.4)")(
      "inter-node-bandwidth", po::value<std::string>(), "per GPU between nodes (default 50GB/s)")(
      "write-bandwidth", po::value<std::string>(), "to the checkpoint's disk (default 1GB/s)");
  return plan;
}

const std::vector<std::string> kPlanOptions = {
    "device", "device-memory",        "seq-len",        "images-per-sample", "tiles-per-image",
    "mfu",    "inter-node-bandwidth", "write-bandwidth"};

po::options_description visible_options() {
  po::options_description visible(
      "Usage:\n"
      "  fthost --config run.toml [key=value ...] [~key ...]   train\n"
      "  fthost --nproc-per-node N --config run.toml ...      train on N local ranks\n"
      "  fthost --nnodes M --node-rank R --master-addr A --master-port P --nproc-per-node N ...\n"
      "                                                        node R of an M-node job (docs/distributed.md)\n"
      "  fthost validate --config run.toml [overrides] [--strict]\n"
      "                                                        check every component and the files the config\n"
      "                                                        names (missing ones: warnings; --strict: errors),\n"
      "                                                        no training (or `fthost validate run.toml`)\n"
      "  fthost data --config run.toml [overrides] [--samples N] [--packed] [--json]\n"
      "                                                        show the tokenized training data and its masks\n"
      "  fthost plan --config run.toml [overrides] [--nproc-per-node N] [--nnodes M]\n"
      "              [--device h100 | --device-memory 80GiB] [--json]\n"
      "                                                        what each rank will need (memory by phase,\n"
      "                                                        step time, checkpoint size) and what fits\n"
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
      "nproc_per_node", po::value<int>(), "the same, as torchtune spells it")(
      "nnodes", po::value<int>(), "machines in the job (torchrun's static rendezvous; default 1)")(
      "node-rank", po::value<int>(), "this machine's place among them, 0 to nnodes-1")(
      "node_rank", po::value<int>(), "the same")("master-addr", po::value<std::string>(),
                                                 "address of node 0, reachable from every node")(
      "master_addr", po::value<std::string>(), "the same")(
      "master-port", po::value<int>(), "rendezvous port on node 0")("master_port", po::value<int>(), "the same")(
      "max-restarts", po::value<int>(),
      "restart this node's ranks after a failure up to N times, resuming from "
      "the newest complete checkpoint")("max_restarts", po::value<int>(), "the same")(
      "force", po::bool_switch(), "cp: overwrite an existing destination")(
      "make-parents", po::bool_switch(), "cp: create the destination's missing directories")(
      "strict", po::bool_switch(), "validate: a missing or unreadable file the config names is an error")(
      "write-manifest", po::value<std::string>(),
      "plugins: write LIB.manifest.json for the plugin library LIB (what ls and validate read instead of loading it)");
  visible.add(data_options());
  visible.add(plan_options());
  return visible;
}

// The launcher's options, with a value each, in both of torchrun's spellings.
const std::vector<std::string> kLauncherOptions = {"nproc-per-node", "nproc_per_node", "nnodes",      "node-rank",
                                                   "node_rank",      "master-addr",    "master_addr", "master-port",
                                                   "master_port",    "max-restarts",   "max_restarts"};

// `fthost --nproc-per-node N ...` (and the multi-node options): the same command line, without
// the launcher's options (either spelling), for each rank.
int launch_local(int argc, char** argv, const LaunchPlan& plan, const Invocation& inv) {
  if (std::getenv("RANK")) {
    std::cerr << "fthost: error: --nproc-per-node: this process is already rank " << std::getenv("RANK")
              << " of a launched job; give --nproc-per-node to the outer command only\n";
    return 2;
  }
  check_launch_plan(plan);
  // Every rank would load the config and print the same error: it is checked once, here, before
  // any rank starts (its errors reach run_command_line's one message). `data --packed` edits the
  // datasets in the training library first, so its ranks check what they read themselves.
  if (is_training_command(inv) && !(inv.command == "data" && inv.data.packed)) {
    check_invocation(inv);
    check_config_before_launch(inv, plan.nnodes * plan.nproc_per_node);
  }
  std::vector<std::string> rank_args;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    bool launcher_option = false;
    for (const auto& name : kLauncherOptions) {
      if (a == "--" + name) {
        ++i;
        launcher_option = true;
      } else if (a.rfind("--" + name + "=", 0) == 0) {
        launcher_option = true;
      }
    }
    if (!launcher_option) rank_args.push_back(a);
  }
  try {
    return launch_ranks(plan, rank_args);
  } catch (const ft::Error& e) {
    std::cerr << "fthost: error: " << e.what() << "\n";
    return 2;
  }
}

// The ranks a run started without the launcher has: torchrun's WORLD_SIZE, else 1.
int world_size_of_run() {
  const char* world = std::getenv("WORLD_SIZE");
  try {
    return world && *world ? std::max(1, std::stoi(world)) : 1;
  } catch (const std::exception&) {
    throw ft::Error(std::string("WORLD_SIZE = \"") + world + "\": expected a number of ranks");
  }
}

// An option given in either of torchrun's spellings ("node-rank" / "node_rank"), if given.
template <class T>
std::optional<T> either_spelling(const po::variables_map& vm, const std::string& dashed);

void read_plan_options(const po::variables_map& vm, PlanOptions& plan) {
  if (const auto nproc = either_spelling<int>(vm, "nproc-per-node")) plan.nproc_per_node = *nproc;
  if (const auto nnodes = either_spelling<int>(vm, "nnodes")) plan.nnodes = *nnodes;
  if (vm.count("device")) plan.device = vm["device"].as<std::string>();
  if (vm.count("device-memory"))
    plan.device_memory = parse_byte_size(vm["device-memory"].as<std::string>(), "device-memory");
  if (vm.count("seq-len")) {
    const std::string text = vm["seq-len"].as<std::string>();
    if (text == "data") {
      plan.seq_len_from_data = true;
    } else {
      std::size_t end = 0;
      try {
        plan.seq_len = std::stoll(text, &end);
      } catch (const std::exception&) {
        end = 0;
      }
      if (end == 0 || end != text.size() || *plan.seq_len < 1)
        throw ft::ConfigError("--seq-len " + text + ": expected a number of tokens (1 or more) or `data`");
    }
  }
  if (vm.count("images-per-sample")) {
    plan.images_per_sample = vm["images-per-sample"].as<std::int64_t>();
    if (*plan.images_per_sample < 0) throw ft::ConfigError("--images-per-sample: expected 0 or more images");
  }
  if (vm.count("tiles-per-image")) {
    plan.tiles_per_image = vm["tiles-per-image"].as<std::int64_t>();
    if (*plan.tiles_per_image < 1) throw ft::ConfigError("--tiles-per-image: expected 1 or more tiles");
  }
  if (vm.count("mfu")) plan.mfu = vm["mfu"].as<double>();
  if (vm.count("inter-node-bandwidth"))
    plan.inter_node_bandwidth =
        parse_byte_size(vm["inter-node-bandwidth"].as<std::string>(), "inter-node-bandwidth", true);
  if (vm.count("write-bandwidth"))
    plan.write_bandwidth = parse_byte_size(vm["write-bandwidth"].as<std::string>(), "write-bandwidth", true);
}

// Plan's options with another command, and launcher options plan has no use for.
void check_plan_options(const po::variables_map& vm, const Invocation& inv) {
  for (const auto& name : kPlanOptions)
    if (vm.count(name) && inv.command != "plan") throw ft::ConfigError("--" + name + " is an option of `fthost plan`");
  if (inv.command != "plan") return;
  for (const char* launcher : {"node-rank", "node_rank", "master-addr", "master_addr", "master-port", "master_port",
                               "max-restarts", "max_restarts"})
    if (vm.count(launcher))
      throw ft::ConfigError(std::string("--") + launcher +
                            " starts ranks; `fthost plan` starts none (it takes --nproc-per-node and --nnodes)");
  if (inv.plan.nproc_per_node < 1) throw ft::ConfigError("--nproc-per-node: expected an integer >= 1");
  if (inv.plan.nnodes < 1) throw ft::ConfigError("--nnodes: expected an integer >= 1");
  if (!(inv.plan.mfu > 0 && inv.plan.mfu <= 1)) throw ft::ConfigError("--mfu: expected a share in (0, 1]");
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
  inv.strict = vm["strict"].as<bool>();
  if (vm.count("write-manifest")) inv.write_manifest = vm["write-manifest"].as<std::string>();
  read_plan_options(vm, inv.plan);
  std::vector<std::string> args;
  if (vm.count("args")) args = vm["args"].as<std::vector<std::string>>();
  if (!args.empty() && (args[0] == "ls" || args[0] == "plugins" || args[0] == "validate" || args[0] == "run" ||
                        args[0] == "data" || args[0] == "cp" || args[0] == "plan")) {
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

template <class T>
std::optional<T> either_spelling(const po::variables_map& vm, const std::string& dashed) {
  std::string underscored = dashed;
  for (char& c : underscored)
    if (c == '-') c = '_';
  if (underscored != dashed && vm.count(dashed) && vm.count(underscored))
    throw ft::Error("--" + dashed + " and --" + underscored + " are the same option; give it once");
  if (vm.count(dashed)) return vm[dashed].as<T>();
  if (vm.count(underscored)) return vm[underscored].as<T>();
  return std::nullopt;
}

// The launch the options ask for: none without --nproc-per-node or --nnodes.
std::optional<LaunchPlan> launch_plan(const po::variables_map& vm) {
  const auto nproc = either_spelling<int>(vm, "nproc-per-node");
  const auto nnodes = either_spelling<int>(vm, "nnodes");
  const auto node_rank = either_spelling<int>(vm, "node-rank");
  const auto master_addr = either_spelling<std::string>(vm, "master-addr");
  const auto master_port = either_spelling<int>(vm, "master-port");
  const auto max_restarts = either_spelling<int>(vm, "max-restarts");
  if (!nproc && !nnodes) {
    if (node_rank || master_addr || master_port || max_restarts)
      throw ft::Error(
          "--node-rank, --master-addr, --master-port and --max-restarts are launcher options: give them with "
          "--nproc-per-node (and --nnodes)");
    return std::nullopt;
  }
  LaunchPlan plan;
  plan.nproc_per_node = nproc.value_or(1);
  plan.nnodes = nnodes.value_or(1);
  plan.node_rank = node_rank.value_or(0);
  plan.master_addr = master_addr.value_or("");
  plan.master_port = master_port.value_or(0);
  plan.max_restarts = max_restarts.value_or(0);
  return plan;
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
    check_plan_options(vm, inv);
    if (inv.command != "plan")
      if (const auto plan = launch_plan(vm)) return launch_local(argc, argv, *plan, inv);
    if (is_training_command(inv)) {
      check_invocation(inv);
      // A run checks its config and every file it names here, before LibTorch loads, so a
      // missing file fails in milliseconds; ranks the launcher started were checked by it.
      if (inv.command == "run" && !std::getenv("FTHOST_LAUNCHER")) check_config_before_launch(inv, world_size_of_run());
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
