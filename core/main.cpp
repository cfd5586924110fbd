// fthost: the command-line host. Parses the command, loads plugins, dispatches.
#include "commands.h"
#include "generate_command.h"
#include "local_launcher.h"
#include "thread_settings.h"

#include <ft/errors.h>
#include <ft/log.h>

#include <boost/program_options.hpp>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace po = boost::program_options;

namespace {

po::options_description visible_options() {
  po::options_description visible(
      "Usage:\n"
      "  fthost --config run.toml [key=value ...] [~key ...]   train\n"
      "  fthost --nproc-per-node N --config run.toml ...      train on N local ranks\n"
      "  fthost validate --config run.toml [overrides]        check every component, no training\n"
      "  fthost generate --checkpoint DIR --prompt TEXT       generate text (fthost generate --help)\n"
      "  fthost ls [KIND] [-v]                                 list components (with -v: schemas)\n"
      "  fthost plugins                                        list plugin libraries\n\n"
      "Options");
  visible.add_options()("help,h", "show this help")("version", "print the version and build fingerprint")(
      "config,c", po::value<std::string>(), "run configuration (TOML)")(
      "plugin-dir", po::value<std::vector<std::string>>()->composing(),
      "extra plugin directory or library (repeatable)")("verbose,v", po::bool_switch(), "ls: show schemas")(
      "nproc-per-node", po::value<int>(), "start N ranks on this machine (distributed training)");
  return visible;
}

// `fthost --nproc-per-node N ...`: the same command line, without the option, for each rank.
int launch_local(int argc, char** argv, int nproc) {
  if (std::getenv("RANK")) {
    std::cerr << "fthost: error: --nproc-per-node: this process is already rank " << std::getenv("RANK")
              << " of a launched job; give --nproc-per-node to the outer command only\n";
    return 2;
  }
  std::vector<std::string> rank_args;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--nproc-per-node") {
      ++i;
      continue;
    }
    if (a.rfind("--nproc-per-node=", 0) == 0) continue;
    rank_args.push_back(a);
  }
  try {
    return fthost::launch_local_ranks(nproc, rank_args);
  } catch (const ft::Error& e) {
    std::cerr << "fthost: error: " << e.what() << "\n";
    return 2;
  }
}

fthost::Invocation invocation_of(const po::variables_map& vm) {
  fthost::Invocation inv;
  if (vm.count("config")) inv.config_path = vm["config"].as<std::string>();
  if (vm.count("plugin-dir")) inv.plugin_dirs = vm["plugin-dir"].as<std::vector<std::string>>();
  inv.verbose = vm["verbose"].as<bool>();
  std::vector<std::string> args;
  if (vm.count("args")) args = vm["args"].as<std::vector<std::string>>();
  if (!args.empty() && (args[0] == "ls" || args[0] == "plugins" || args[0] == "validate" || args[0] == "run")) {
    inv.command = args[0];
    args.erase(args.begin());
  }
  inv.args = std::move(args);
  return inv;
}

}  // namespace

int main(int argc, char** argv) {
  fthost::ensure_passive_openmp_wait_policy(argv);
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  if (argc > 1 && std::string(argv[1]) == "generate") return fthost::generate_main(argc - 1, argv + 1);

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
    std::cout << fthost::version_text() << "\n";
    return 0;
  }
  if (vm.count("nproc-per-node")) return launch_local(argc, argv, vm["nproc-per-node"].as<int>());

  try {
    return fthost::dispatch(invocation_of(vm));
  } catch (const ft::Error& e) {
    std::cerr << "fthost: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "fthost: internal error: " << e.what() << "\n";
    return 3;
  }
}
