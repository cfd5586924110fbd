#include "cli/config_commands.h"

#include "config/shipped_configs.h"
#include "config/yaml_config.h"

#include <ft/errors.h>

#include <boost/filesystem.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

namespace fthost {

namespace fs = boost::filesystem;

namespace {

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ft::Error("cp: cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool is_toml_path(const std::string& path) { return fs::path(path).extension() == ".toml"; }

// The file SOURCE names: a config file, else a shipped config.
std::string source_file(const std::string& source) {
  boost::system::error_code ec;
  if (fs::is_regular_file(source, ec)) return source;
  if (auto shipped = find_shipped_config(source)) return *shipped;
  throw ft::Error("cp: " + unknown_config_message(source));
}

// DEST as tune cp reads it: a directory receives the source's file name; a name without an
// extension takes the source's.
std::string destination_file(const std::string& destination, const std::string& source) {
  boost::system::error_code ec;
  fs::path dest(destination);
  if (fs::is_directory(dest, ec) || (!destination.empty() && destination.back() == '/'))
    dest /= fs::path(source).filename();
  else if (!dest.has_extension())
    dest += fs::path(source).extension();
  if (!has_config_extension(dest.string()))
    throw ft::Error("cp: " + dest.string() + ": the destination must end in .yaml, .yml or .toml");
  return dest.string();
}

// The shortest text that reads back as `value` (toml++ writes 17 digits: 2e-5 as 2.0000000000000002e-05).
std::string shortest_float_text(double value) {
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  std::string text = buf;
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

// A float literal of toml++'s output (digits with '.' or an exponent), in its shortest form;
// anything else unchanged.
std::string shorter_if_float(const std::string& token) {
  const auto start = token.find_first_not_of(' ');
  const auto end = token.find_last_not_of(' ');
  if (start == std::string::npos) return token;
  const std::string core = token.substr(start, end - start + 1);
  if (core.find_first_of(".eE") == std::string::npos || core.find_first_not_of("0123456789+-.eE") != std::string::npos)
    return token;
  char* parsed_end = nullptr;
  const double value = std::strtod(core.c_str(), &parsed_end);
  if (parsed_end != core.c_str() + core.size()) return token;
  return token.substr(0, start) + shortest_float_text(value) + token.substr(end + 1);
}

// Rewrites the float values of `key = value` and `key = [a, b]` lines (strings are quoted, so a
// line holding a quote is left alone).
std::string with_shortest_floats(const std::string& toml_text) {
  std::istringstream in(toml_text);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find(" = ");
    if (eq != std::string::npos && line.find_first_of("'\"", eq) == std::string::npos) {
      std::string value = line.substr(eq + 3);
      if (value.size() >= 2 && value.front() == '[' && value.back() == ']') {
        std::string items, item;
        std::istringstream parts(value.substr(1, value.size() - 2));
        bool first = true;
        while (std::getline(parts, item, ',')) {
          items += (first ? "" : ",") + shorter_if_float(item);
          first = false;
        }
        value = "[" + items + "]";
      } else {
        value = shorter_if_float(value);
      }
      line = line.substr(0, eq + 3) + value;
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string toml_translation_of_yaml(const std::string& yaml_path) {
  auto doc = load_yaml_config_text(read_whole_file(yaml_path), yaml_path);
  std::ostringstream out;
  out << "# " << fs::path(yaml_path).filename().string()
      << " in TOML (fthost cp). YAML nulls are left out, as fthost reads them; comments are not carried over.\n"
      << toml::toml_formatter(doc->root()) << "\n";
  return with_shortest_floats(out.str());
}

int cmd_cp(const std::vector<std::string>& args, const CopyOptions& options) {
  if (args.size() != 2)
    throw ft::Error(
        "cp: expected SOURCE DEST (a shipped config name such as qwen2_5/0.5B_full, or a config file, "
        "and where to write it), got " +
        std::to_string(args.size()) + " argument(s)");
  const std::string source = source_file(args[0]);
  const std::string destination = destination_file(args[1], source);

  boost::system::error_code ec;
  if (fs::exists(destination, ec) && !options.force)
    throw ft::Error("cp: " + destination + " already exists; pass --force to overwrite it");
  if (fs::exists(destination, ec) && fs::equivalent(source, destination, ec))
    throw ft::Error("cp: " + source + " and " + destination + " are the same file");
  const fs::path parent = fs::path(destination).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    if (!options.make_parents)
      throw ft::Error("cp: directory " + parent.string() + " does not exist; pass --make-parents to create it");
    fs::create_directories(parent);
  }

  std::string text;
  const bool to_toml = is_toml_path(destination);
  if (to_toml == is_toml_path(source)) {
    text = read_whole_file(source);
  } else if (to_toml) {
    text = toml_translation_of_yaml(source);
  } else {
    throw ft::Error("cp: " + source + " is TOML and " + destination +
                    " YAML: cp translates YAML to TOML only (fthost reads either; keep the .toml)");
  }
  std::ofstream out(destination, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw ft::Error("cp: cannot write " + destination);
  std::cout << (to_toml && !is_toml_path(source) ? "Translated " : "Copied ") << source << " to " << destination
            << "\n";
  return 0;
}

int cmd_ls_configs() {
  const auto names = shipped_config_names();
  if (names.empty()) throw ft::Error("ls configs: no shipped configs in " + shipped_config_dir());
  std::cout << "configs (" << shipped_config_dir() << "):\n";
  for (const auto& name : names) std::cout << "  " << name << "\n";
  return 0;
}

}  // namespace fthost
