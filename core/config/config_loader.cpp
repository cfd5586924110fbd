#include "config/config_loader.h"

#include "config/omegaconf_scalars.h"
#include "config/yaml_config.h"

#include <ft/errors.h>
#include <ft/text.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

namespace fthost {

using ft::ConfigError;
using ft::detail::ConfigDocument;

std::shared_ptr<ConfigDocument> load_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    throw ConfigError(path + ": cannot open config file: " + ft::errno_text(err));
  }
  std::stringstream text;
  text << in.rdbuf();
  if (is_yaml_path(path)) return load_yaml_config_text(text.str(), path);
  return load_config_text(text.str(), path);
}

namespace {

// Records the line each key is written on, so messages name it as YAML's do. Config keys are
// addressed by dotted paths (`optimizer.lr`, overrides, `${...}`), so a quoted key holding a '.'
// could never be read, overridden or referenced: it is refused where it is written.
void record_key_lines(const toml::node& node, const std::string& path, const std::string& source_name,
                      ConfigDocument& doc) {
  if (const auto* table = node.as_table()) {
    for (const auto& [key, value] : *table) {
      const std::string name(key.str());
      const std::string child = path.empty() ? name : path + "." + name;
      if (name.find('.') != std::string::npos || name.empty())
        throw ConfigError(source_name + ":" + std::to_string(key.source().begin.line) + ": key \"" + name + "\"" +
                          (path.empty() ? "" : " in " + path) + (name.empty() ? " is empty" : " contains '.'") +
                          ": config keys are addressed by dotted paths, so it could never be read");
      if (key.source().begin.line > 0) doc.set_line(child, key.source().begin.line);
      record_key_lines(value, child, source_name, doc);
    }
  } else if (const auto* array = node.as_array()) {
    for (std::size_t i = 0; i < array->size(); ++i) {
      const std::string item = path + "." + std::to_string(i);
      if (array->get(i)->source().begin.line > 0) doc.set_line(item, array->get(i)->source().begin.line);
      record_key_lines(*array->get(i), item, source_name, doc);
    }
  }
}

}  // namespace

std::shared_ptr<ConfigDocument> load_config_text(const std::string& text, const std::string& source_name) {
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw ConfigError(source_name + ":" + std::to_string(where.line) + ":" + std::to_string(where.column) +
                      ": invalid TOML: " + std::string(e.description()));
  }
  auto doc = std::make_shared<ConfigDocument>(std::move(root), source_name);
  record_key_lines(doc->root(), "", source_name, *doc);
  return doc;
}

namespace {

// Deeper keys and reference chains are refused rather than recursed into: each level is a stack
// frame of the walk or of interpolation. toml++ refuses the same depth in a file.
constexpr std::size_t kMaxDepth = 256;

std::vector<std::string> split_path(const std::string& dotted, const std::string& what) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    auto dot = dotted.find('.', start);
    std::string part = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (part.empty()) throw ConfigError("command line: " + what + ": empty key segment in '" + dotted + "'");
    if (parts.size() == kMaxDepth)
      throw ConfigError("command line: " + what + ": key nests deeper than " + std::to_string(kMaxDepth) + " levels");
    parts.push_back(part);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

// Removes the key at `parts` if it is there: a null override, as OmegaConf's null is the key left out.
void erase_if_present(ConfigDocument& doc, const std::vector<std::string>& parts) {
  std::string parent_path;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) parent_path += (i ? "." : "") + parts[i];
  if (toml::node* parent = doc.find(parent_path))
    if (toml::table* table = parent->as_table()) table->erase(parts.back());
}

// One of OmegaConf's plain scalars as a TOML value (not null: a list item cannot be left out).
void insert_plain_scalar(toml::array& into, const std::string& item, const std::string& arg) {
  PlainScalar scalar;
  try {
    scalar = resolve_plain_scalar(item);
  } catch (const ConfigError& e) {
    throw ConfigError("command line: " + arg + ": " + e.what());
  }
  switch (scalar.type) {
    case PlainScalar::Type::Null: throw ConfigError("command line: " + arg + ": a list item is empty or null");
    case PlainScalar::Type::Bool: into.push_back(scalar.boolean); break;
    case PlainScalar::Type::Int: into.push_back(scalar.integer); break;
    case PlainScalar::Type::Float: into.push_back(scalar.number); break;
    case PlainScalar::Type::String: into.push_back(item); break;
  }
}

// `[SIGTERM, SIGUSR1]`, a list of plain scalars as torchtune's command line reads it (OmegaConf's
// YAML flow sequence; quoted items are TOML and parsed before this); nothing nested.
std::optional<toml::array> plain_scalar_list(const std::string& text, const std::string& arg) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return std::nullopt;
  const std::string inside = text.substr(1, text.size() - 2);
  if (inside.find_first_of("[]{}\"'") != std::string::npos)
    throw ConfigError("command line: " + arg +
                      ": a list on the command line holds plain values; nested or partly quoted lists belong in the "
                      "config file");
  toml::array items;
  auto trimmed = [](const std::string& t) {
    const auto first = t.find_first_not_of(" \t");
    return first == std::string::npos ? std::string() : t.substr(first, t.find_last_not_of(" \t") - first + 1);
  };
  if (trimmed(inside).empty()) return items;
  std::size_t start = 0;
  while (true) {
    const auto comma = inside.find(',', start);
    insert_plain_scalar(items, trimmed(inside.substr(start, comma - start)), arg);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

void set_override(ConfigDocument& doc, const std::string& arg, std::size_t eq) {
  std::string key = arg.substr(0, eq);
  const std::string text = arg.substr(eq + 1);
  // torchtune's `model=torchtune.models.llama3_2.llama3_2_1b` sets the component of a top-level table.
  if (key.find('.') == std::string::npos)
    if (const toml::node* existing = doc.find(key);
        existing && existing->is_table() && existing->as_table()->contains("_component_"))
      key += "._component_";
  auto parts = split_path(key, arg);

  toml::table parsed;
  if (key.find("max_filename") != std::string::npos) {
    // As torchtune does: `00004` names a shard count with its leading zeros, not the integer 4.
    parsed.insert("v", text);
  } else {
    try {
      parsed = ft::detail::parse_value_as_table(text);
    } catch (const std::exception&) {
      // Not a TOML value: read it as torchtune does (OmegaConf's YAML scalars, `None` for null),
      // so `lr=.5` and `shuffle=True` are a number and a boolean and `output_dir=/tmp/run` a string.
      if (auto list = plain_scalar_list(text, arg)) {
        parsed.insert("v", std::move(*list));
      } else {
        PlainScalar scalar;
        try {
          scalar = resolve_plain_scalar(text);
        } catch (const ConfigError& e) {
          throw ConfigError("command line: " + arg + ": " + e.what());
        }
        switch (text == "None" ? PlainScalar::Type::Null : scalar.type) {
          case PlainScalar::Type::Null:
            erase_if_present(doc, parts);
            doc.mark_overridden(key);
            return;
          case PlainScalar::Type::Bool: parsed.insert("v", scalar.boolean); break;
          case PlainScalar::Type::Int: parsed.insert("v", scalar.integer); break;
          case PlainScalar::Type::Float: parsed.insert("v", scalar.number); break;
          case PlainScalar::Type::String: parsed.insert("v", text); break;
        }
      }
    }
  }

  toml::table* table = &doc.root();
  std::string walked;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    walked += (walked.empty() ? "" : ".") + parts[i];
    toml::node* next = table->get(parts[i]);
    if (!next) {
      // A table the override makes is written on the command line, and its errors say so.
      next = &table->insert(parts[i], toml::table{}).first->second;
      doc.mark_overridden(walked);
    }
    if (!next->is_table())
      throw ConfigError("command line: " + arg + ": '" + walked + "' is " + ft::detail::describe(*next) +
                        ", not a table");
    table = next->as_table();
  }
  table->insert_or_assign(parts.back(), *parsed.get("v"));
  doc.mark_overridden(key);
}

void remove_override(ConfigDocument& doc, const std::string& arg) {
  const std::string key = arg.substr(1);
  auto parts = split_path(key, arg);
  std::string parent_path;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) parent_path += (i ? "." : "") + parts[i];
  toml::node* parent = doc.find(parent_path);
  toml::table* table = parent ? parent->as_table() : nullptr;
  if (!table || !table->contains(parts.back()))
    throw ConfigError("command line: " + arg + ": no key '" + key + "' in " + doc.source() + " to remove");
  table->erase(parts.back());
}

}  // namespace

void apply_overrides(ConfigDocument& doc, const std::vector<std::string>& overrides) {
  for (const auto& arg : overrides) {
    if (!arg.empty() && arg[0] == '~') {
      remove_override(doc, arg);
      continue;
    }
    auto eq = arg.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ConfigError("command line: '" + arg + "': expected key=value or ~key");
    set_override(doc, arg, eq);
  }
}

namespace {

struct Interpolator {
  ConfigDocument& doc;
  std::set<std::string> in_progress;  // paths being resolved, to catch cycles
  std::set<std::string> referenced;   // every key a `${...}` named

  [[noreturn]] void fail(const std::string& path, const std::string& msg) {
    throw ConfigError(doc.origin_of(path) + ": " + path + ": " + msg);
  }

  static std::string scalar_text(const toml::node& n) {
    if (auto s = n.value_exact<std::string>()) return *s;
    std::ostringstream out;
    n.visit([&](auto&& v) {
      if constexpr (toml::is_number<decltype(v)> || toml::is_boolean<decltype(v)>) out << v;
    });
    return out.str();
  }

  // OmegaConf's `${oc.env:VAR}` and `${oc.env:VAR,default}`: the variable's value as a string;
  // when it is unset the default (str(default), quotes stripped), and null when the default is
  // null (OmegaConf's None). Unset without a default is an error, as in OmegaConf.
  static constexpr const char* kEnvResolver = "oc.env:";
  static bool is_env_reference(const std::string& ref) { return ref.rfind(kEnvResolver, 0) == 0; }

  std::optional<std::string> env_value(const std::string& ref, const std::string& referrer) {
    auto trim = [](std::string s) {
      const auto first = s.find_first_not_of(" \t");
      if (first == std::string::npos) return std::string();
      return s.substr(first, s.find_last_not_of(" \t") - first + 1);
    };
    const std::string args = ref.substr(std::char_traits<char>::length(kEnvResolver));
    const auto comma = args.find(',');
    const std::string var = trim(args.substr(0, comma));
    if (var.empty()) fail(referrer, "${" + ref + "}: no environment variable named");
    if (const char* value = std::getenv(var.c_str())) return std::string(value);
    if (comma == std::string::npos)
      fail(referrer, "${" + ref + "}: environment variable '" + var + "' is not set and no default is given");
    std::string fallback = trim(args.substr(comma + 1));
    if (fallback == "null") return std::nullopt;
    if (fallback.size() >= 2 && (fallback.front() == '\'' || fallback.front() == '"') &&
        fallback.back() == fallback.front())
      fallback = fallback.substr(1, fallback.size() - 2);
    return fallback;
  }

  // The node a `${ref}` names, itself resolved first.
  const toml::node& target(const std::string& ref, const std::string& referrer) {
    referenced.insert(ref);
    toml::node* n = doc.find(ref);
    if (!n) fail(referrer, "${" + ref + "}: no key '" + ref + "' in the config");
    if (n->is_table() || n->is_array())
      fail(referrer, "${" + ref + "} names a table or array; only values interpolate");
    if (n->is_string()) resolve_in_table(ref);
    return *doc.find(ref);
  }

  // `text` with every `${ref}` spliced in as text.
  std::string splice(const std::string& text, const std::string& path) {
    std::string out;
    std::size_t pos = 0;
    while (true) {
      auto open = text.find("${", pos);
      if (open == std::string::npos) return out + text.substr(pos);
      auto close = text.find('}', open);
      if (close == std::string::npos) fail(path, "unterminated '${' in \"" + text + "\"");
      out += text.substr(pos, open - pos);
      const std::string ref = text.substr(open + 2, close - open - 2);
      if (is_env_reference(ref))
        out += env_value(ref, path).value_or("None");  // str(None), as OmegaConf splices it
      else
        out += scalar_text(target(ref, path));
      pos = close + 1;
    }
  }

  // Resolves the string value at a dotted path inside a table.
  void resolve_in_table(const std::string& path) {
    toml::node* node = doc.find(path);
    if (!node || !node->is_string()) fail(path, "'" + path + "' does not name a string value");
    const std::string text = *node->value_exact<std::string>();
    if (text.find("${") == std::string::npos) return;
    if (in_progress.count(path)) fail(path, "interpolation cycle through '" + path + "'");
    if (in_progress.size() == kMaxDepth)
      fail(path, "interpolation chain longer than " + std::to_string(kMaxDepth) + " references");
    in_progress.insert(path);

    auto dot = path.rfind('.');
    toml::node& parent_node = *doc.find(dot == std::string::npos ? "" : path.substr(0, dot));
    if (auto* array = parent_node.as_array()) {
      // An array item named by another key's `${list.0}`: splice as text, as walk() does.
      const std::string spliced = splice(text, path);
      const toml::node* item = doc.find(path);
      for (std::size_t i = 0; i < array->size(); ++i)
        if (array->get(i) == item) array->replace(array->begin() + static_cast<std::ptrdiff_t>(i), spliced);
      in_progress.erase(path);
      return;
    }
    toml::table& parent = *parent_node.as_table();
    const std::string key = dot == std::string::npos ? path : path.substr(dot + 1);
    const bool whole = text.rfind("${", 0) == 0 && text.find('}') == text.size() - 1;
    if (whole && is_env_reference(text.substr(2, text.size() - 3))) {
      // A null default leaves the key out, as a YAML null does.
      if (auto value = env_value(text.substr(2, text.size() - 3), path))
        parent.insert_or_assign(key, *value);
      else
        parent.erase(key);
    } else if (whole) {
      // Copy first: assigning replaces the node `target` refers to only when they coincide (a cycle, caught above).
      std::unique_ptr<toml::node> value;
      target(text.substr(2, text.size() - 3), path).visit([&](auto&& v) {
        value = std::make_unique<std::decay_t<decltype(v)>>(v);
      });
      parent.insert_or_assign(key, std::move(*value));
    } else {
      parent.insert_or_assign(key, splice(text, path));
    }
    in_progress.erase(path);
  }

  void walk(toml::node& node, const std::string& path) {
    if (auto* t = node.as_table()) {
      std::vector<std::string> keys;
      for (auto& [k, v] : *t) keys.emplace_back(k.str());
      for (const auto& k : keys) {
        const std::string child = path.empty() ? k : path + "." + k;
        toml::node& v = *t->get(k);
        if (v.is_string())
          resolve_in_table(child);
        else
          walk(v, child);
      }
    } else if (auto* a = node.as_array()) {
      // Array items are addressed by index ("dataset.1.source", as ConfigDocument::find reads
      // it); string items' references splice in as text.
      for (std::size_t i = 0; i < a->size(); ++i) {
        const std::string item_path = path + "." + std::to_string(i);
        toml::node& item = *a->get(i);
        if (auto s = item.value_exact<std::string>()) {
          if (s->find("${") != std::string::npos)
            a->replace(a->begin() + static_cast<std::ptrdiff_t>(i), splice(*s, item_path));
        } else {
          walk(item, item_path);
        }
      }
    }
  }
};

}  // namespace

std::set<std::string> interpolate(ConfigDocument& doc) {
  Interpolator interp{doc, {}, {}};
  interp.walk(doc.root(), "");
  return std::move(interp.referenced);
}

std::shared_ptr<ConfigDocument> load_config(const std::string& path, const std::vector<std::string>& overrides) {
  auto doc = load_config_file(path);
  apply_overrides(*doc, overrides);
  interpolate(*doc);
  return doc;
}

}  // namespace fthost
