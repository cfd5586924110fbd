// The registry of components: `_component_` name -> kind, schema, factory, owning library.
//
// A plugin's register function adds its components explicitly:
//
//   reg.add<ft::Optimizer>("torch.optim.AdamW", schema, "AdamW with decoupled weight decay",
//       [](const ft::ConfigNode& cfg, ft::Optimizer::Args args) { return std::make_unique<AdamW>(...); });
//
// An optional last argument lists the entry's capabilities: the optional roles its objects
// provide (e.g. ft::TrainingCheckpointStorage::capability for a checkpointer), so the host can
// check a configuration's needs at validation, without constructing anything.
//
// The host instantiates them as torchtune's `config.instantiate(cfg, *args)` does: the table's
// `_component_` picks the entry, the kind is checked, the table is validated against the
// schema (defaults filled in), then the factory gets the table and the recipe's arguments.
// Objects returned by instantiate() keep their plugin library loaded while they live. Where the
// arguments have a `registry` member (Model::Args, Checkpointer::Args), instantiate() sets it, so
// a factory can look up model families or build another component.
//
// A model family's plugin also registers the family itself (ft/model_family.h):
//
//   reg.add_family(ft::ModelFamily{"qwen3", {"qwen3"}, {"Qwen3ForCausalLM"}, {"QWEN3"}, ...});
#pragma once

#include <ft/config.h>
#include <ft/errors.h>
#include <ft/kind.h>
#include <ft/model_family.h>
#include <ft/schema.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ft {

struct FT_API FactoryBase {
  virtual ~FactoryBase() = default;
};

template <class Interface>
struct TypedFactory final : FactoryBase {
  using Make = std::function<std::unique_ptr<Interface>(const ConfigNode&, typename Interface::Args)>;
  explicit TypedFactory(Make m) : make(std::move(m)) {}
  Make make;
};

struct ComponentInfo {
  std::string name;
  Kind kind;
  Schema schema;
  std::string summary;
  std::string library;                            // path of the plugin library that registered it
  std::shared_ptr<const void> library_keepalive;  // holds the library loaded
  std::shared_ptr<const FactoryBase> factory;
  std::vector<std::string> capabilities;  // optional roles its objects provide
  // Set for a component that picks another to build from the same table (add_delegating).
  std::function<std::string(const ConfigNode&, const class Registry&)> delegate;

  bool provides(std::string_view capability) const {
    for (const auto& c : capabilities)
      if (c == capability) return true;
    return false;
  }
};

class Registry;

namespace detail {
template <class Args, class = void>
struct has_registry_member : std::false_type {};
template <class Args>
struct has_registry_member<Args, std::void_t<decltype(std::declval<Args&>().registry)>> : std::true_type {};
}  // namespace detail

class FT_API Registry {
 public:
  template <class Interface, class Make>
  void add(std::string name, Schema schema, std::string summary, Make make,
           std::vector<std::string> capabilities = {}) {
    auto factory = std::make_shared<TypedFactory<Interface>>(typename TypedFactory<Interface>::Make(std::move(make)));
    add_entry(ComponentInfo{std::move(name),
                            Interface::kind,
                            std::move(schema),
                            std::move(summary),
                            {},
                            {},
                            std::move(factory),
                            std::move(capabilities),
                            {}});
  }

  // A component that builds nothing itself: `choose` names the component of the same kind that
  // builds the object from the same table (fthost.models.from_hf_config picks a family's by
  // config.json's model_type). What it names must not delegate in turn.
  using Choose = std::function<std::string(const ConfigNode&, const Registry&)>;
  template <class Interface>
  void add_delegating(std::string name, Schema schema, std::string summary, Choose choose) {
    add_entry(ComponentInfo{std::move(name),
                            Interface::kind,
                            std::move(schema),
                            std::move(summary),
                            {},
                            {},
                            nullptr,
                            {},
                            std::move(choose)});
  }

  // A family name, a config.json model_type or a checkpointer model_type already registered (by
  // this library or, at merge, another) is an error naming both.
  void add_family(ModelFamily family);

  const ComponentInfo* find(std::string_view name) const;
  // Every family, by name.
  std::vector<const ModelFamily*> families() const;
  // The family that reads a config.json of this model_type; nullptr: none.
  const ModelFamily* family_reading(std::string_view hf_model_type) const;
  // The family torchtune's checkpointer names with this model_type; nullptr: none.
  const ModelFamily* family_named_by_checkpointer(std::string_view model_type) const;
  // Every family's checkpointer model_type values, sorted.
  std::vector<std::string> checkpointer_model_types() const;
  std::vector<const ComponentInfo*> list(std::optional<Kind> kind = std::nullopt) const;
  std::size_t size() const { return entries_.size(); }

  // Moves every entry of `other` in, owned by `library`; a name already present is an error naming both libraries.
  void merge(Registry&& other, const std::string& library, std::shared_ptr<const void> keepalive);

  // Directories the host searched for plugins, quoted in "unknown component" errors.
  void set_search_description(std::string text) { searched_ = std::move(text); }

  // Finds the component named by `table`'s `_component_`, checks it is of `kind`, validates the
  // table against its schema and fills defaults. Throws ConfigError with the table's path.
  const ComponentInfo& resolve(const ConfigNode& table, Kind kind) const;

  template <class Interface>
  std::shared_ptr<Interface> instantiate(const ConfigNode& table, typename Interface::Args args = {}) const {
    const ComponentInfo& info = resolve(table, Interface::kind);
    if (!info.delegate) return instantiate_entry<Interface>(info, table, std::move(args));
    return instantiate_entry<Interface>(delegated(info, table, Interface::kind), table, std::move(args));
  }

 private:
  template <class Interface>
  std::shared_ptr<Interface> instantiate_entry(const ComponentInfo& info, const ConfigNode& table,
                                               typename Interface::Args args) const {
    if constexpr (detail::has_registry_member<typename Interface::Args>::value) {
      if (!args.registry) args.registry = this;
    }
    const auto& factory = static_cast<const TypedFactory<Interface>&>(*info.factory);
    std::unique_ptr<Interface> object;
    try {
      object = factory.make(table, std::move(args));
    } catch (const ConfigError&) {
      throw;
    } catch (const std::exception& e) {
      fail_construction(table, info, e.what());
    }
    if (!object) fail_construction(table, info, "factory returned no object");
    auto keepalive = info.library_keepalive;
    return std::shared_ptr<Interface>(object.release(), [keepalive](Interface* p) { delete p; });
  }

  const ComponentInfo& resolve_as(std::string_view name, const ConfigNode& table, Kind kind) const;
  // The component `info` delegates to, resolved against the same table.
  const ComponentInfo& delegated(const ComponentInfo& info, const ConfigNode& table, Kind kind) const;
  void add_entry(ComponentInfo info);
  void add_family_entry(ModelFamily family, std::shared_ptr<const void> keepalive);

  struct FamilyEntry {
    ModelFamily family;
    std::shared_ptr<const void> library_keepalive;  // its default_tokenizer is the library's code
  };
  [[noreturn]] static void fail_construction(const ConfigNode& table, const ComponentInfo& info, const char* what);

  std::map<std::string, ComponentInfo, std::less<>> entries_;
  std::map<std::string, FamilyEntry, std::less<>> families_;
  std::string searched_;
};

}  // namespace ft
