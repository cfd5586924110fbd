#include <ft/registry.h>

#include <algorithm>

#include "ft_host/config_document.h"
#include "ft_host/schema_check.h"
#include "ft_host/suggest.h"

namespace ft {

void Registry::add_entry(ComponentInfo info) {
  if (info.name.empty()) throw Error("registry: a component needs a non-empty name");
  for (const auto& spec : info.schema.keys()) {
    if (spec.default_toml.empty()) continue;
    auto parsed = detail::parse_value_as_table(spec.default_toml);
    if (!detail::value_matches(spec.type, *parsed.get("v")))
      throw Error("registry: " + info.name + ": key '" + spec.name + "' is declared " +
                  std::string(value_type_name(spec.type)) + " but its default is `" + spec.default_toml + "`");
  }
  auto [it, inserted] = entries_.emplace(info.name, std::move(info));
  if (!inserted) throw Error("registry: component '" + it->first + "' registered twice by the same library");
}

namespace {

std::string family_text(const ModelFamily& f) {
  return "family '" + f.name + "'" + (f.library.empty() ? std::string() : " (" + f.library + ")");
}

// The first name `a` and `b` both claim in one of their lists, or empty.
std::string shared_name(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (const auto& name : a)
    for (const auto& other : b)
      if (name == other) return name;
  return {};
}

}  // namespace

void Registry::add_family(ModelFamily family) { add_family_entry(std::move(family), nullptr); }

void Registry::add_family_entry(ModelFamily family, std::shared_ptr<const void> keepalive) {
  if (family.name.empty()) throw Error("registry: a model family needs a non-empty name");
  for (const auto& [name, entry] : families_) {
    const ModelFamily& other = entry.family;
    std::string clash;
    if (name == family.name) clash = "its name";
    if (auto type = shared_name(family.hf_model_types, other.hf_model_types); clash.empty() && !type.empty())
      clash = "the config.json model_type \"" + type + "\"";
    if (auto type = shared_name(family.checkpointer_model_types, other.checkpointer_model_types);
        clash.empty() && !type.empty())
      clash = "the checkpointer model_type \"" + type + "\"";
    if (!clash.empty())
      throw PluginError(family_text(family) + " and " + family_text(other) + " both claim " + clash +
                        "; remove one of them from the plugin path");
  }
  std::string key = family.name;
  families_.emplace(std::move(key), FamilyEntry{std::move(family), std::move(keepalive)});
}

std::vector<const ModelFamily*> Registry::families() const {
  std::vector<const ModelFamily*> out;
  for (const auto& [name, entry] : families_) out.push_back(&entry.family);
  return out;
}

const ModelFamily* Registry::family_reading(std::string_view hf_model_type) const {
  for (const auto& [name, entry] : families_)
    for (const auto& type : entry.family.hf_model_types)
      if (type == hf_model_type) return &entry.family;
  return nullptr;
}

const ModelFamily* Registry::family_named_by_checkpointer(std::string_view model_type) const {
  for (const auto& [name, entry] : families_)
    for (const auto& type : entry.family.checkpointer_model_types)
      if (type == model_type) return &entry.family;
  return nullptr;
}

std::vector<std::string> Registry::checkpointer_model_types() const {
  std::vector<std::string> out;
  for (const auto& [name, entry] : families_)
    out.insert(out.end(), entry.family.checkpointer_model_types.begin(), entry.family.checkpointer_model_types.end());
  std::sort(out.begin(), out.end());
  return out;
}

const ComponentInfo* Registry::find(std::string_view name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

std::vector<const ComponentInfo*> Registry::list(std::optional<Kind> kind) const {
  std::vector<const ComponentInfo*> out;
  for (const auto& [name, info] : entries_)
    if (!kind || info.kind == *kind) out.push_back(&info);
  return out;
}

void Registry::merge(Registry&& other, const std::string& library, std::shared_ptr<const void> keepalive) {
  for (auto& [name, info] : other.entries_) {
    if (auto* existing = find(name))
      throw PluginError("component '" + name + "' is registered by two libraries: " + existing->library + " and " +
                        library + "; remove one of them from the plugin path");
  }
  for (auto& [name, info] : other.entries_) {
    info.library = library;
    info.library_keepalive = keepalive;
    entries_.emplace(name, std::move(info));
  }
  other.entries_.clear();
  for (auto& [name, entry] : other.families_) {
    entry.family.library = library;
    add_family_entry(std::move(entry.family), keepalive);
  }
  other.families_.clear();
}

namespace {

// torchtune components of model kinds fthost does not train: named as such, not as typos.
std::string out_of_scope(const std::string& name) {
  auto starts = [&](const char* prefix) { return name.rfind(prefix, 0) == 0; };
  if (starts("torchtune.models.clip.") || starts("torchtune.models.flux.") || starts("torchtune.models.t5."))
    return "'" + name +
           "' belongs to a multimodal model fthost does not train (it trains text decoders and Llama 3.2 "
           "Vision)";
  if (starts("torchtune.models.qwen3.qwen3_moe") || starts("torchtune.models.qwen3.lora_qwen3_moe"))
    return "'" + name + "' is no builder fthost has: Qwen3-MoE is fthost.models.qwen3_moe.qwen3_30b_a3b, " +
           "fthost.models.qwen3_moe.qwen3_235b_a22b, or fthost.models.from_hf_config with the checkpoint's config.json";
  return {};
}

}  // namespace

const ComponentInfo& Registry::resolve(const ConfigNode& table, Kind kind) const {
  return resolve_as(table.component(), table, kind);
}

const ComponentInfo& Registry::resolve_as(std::string_view component, const ConfigNode& table, Kind kind) const {
  const std::string name(component);
  if (name.empty())
    table.fail("_component_", "missing: name the " + std::string(kind_name(kind)) +
                                  " to use, e.g. _component_ = \"...\" (see `fthost ls " +
                                  std::string(kind_name(kind)) + "`)");
  const ComponentInfo* info = find(name);
  if (!info) {
    if (std::string reason = out_of_scope(name); !reason.empty()) table.fail("_component_", reason);
    std::vector<std::string> names;
    for (const auto& [n, i] : entries_) names.push_back(n);
    auto near = detail::close_matches(name, names);
    std::string msg = "unknown component '" + name + "'";
    if (!near.empty()) {
      msg += "; did you mean ";
      for (std::size_t i = 0; i < near.size(); ++i) msg += (i ? ", '" : "'") + near[i] + "'";
      msg += "?";
    }
    msg += " (" + std::to_string(entries_.size()) + " components loaded" +
           (searched_.empty() ? std::string(")") : " from " + searched_ + ")");
    table.fail("_component_", msg);
  }
  if (info->kind != kind) {
    const std::string is = std::string(kind_name(info->kind));
    const std::string want = std::string(kind_name(kind));
    auto article = [](const std::string& w) {
      return std::string("aeiou").find(w[0]) != std::string::npos ? "an " : "a ";
    };
    throw ConfigError(table.origin("_component_") + ": " + table.path() + ": '" + name + "' is " + article(is) + is +
                      ", not " + article(want) + want);
  }
  auto problems = detail::check_and_complete(table, info->schema);
  if (!problems.empty()) {
    std::string msg;
    for (const auto& p : problems) msg += (msg.empty() ? "" : "\n") + p;
    throw ConfigError(msg);
  }
  return *info;
}

const ComponentInfo& Registry::delegated(const ComponentInfo& info, const ConfigNode& table, Kind kind) const {
  std::string target;
  try {
    target = info.delegate(table, *this);
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    fail_construction(table, info, e.what());
  }
  const ComponentInfo& chosen = resolve_as(target, table, kind);
  if (chosen.delegate) fail_construction(table, info, ("it chose " + target + ", which delegates in turn").c_str());
  return chosen;
}

void Registry::fail_construction(const ConfigNode& table, const ComponentInfo& info, const char* what) {
  throw ConfigError(table.origin() + ": " + table.path() + ": " + info.name + " (" + info.library +
                    ") failed: " + what);
}

}  // namespace ft
