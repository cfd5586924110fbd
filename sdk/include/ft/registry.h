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
// Objects returned by instantiate() keep their plugin library loaded while they live.
#pragma once

#include <ft/config.h>
#include <ft/errors.h>
#include <ft/kind.h>
#include <ft/schema.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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

  bool provides(std::string_view capability) const {
    for (const auto& c : capabilities)
      if (c == capability) return true;
    return false;
  }
};

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
                            std::move(capabilities)});
  }

  const ComponentInfo* find(std::string_view name) const;
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

 private:
  void add_entry(ComponentInfo info);
  [[noreturn]] static void fail_construction(const ConfigNode& table, const ComponentInfo& info, const char* what);

  std::map<std::string, ComponentInfo, std::less<>> entries_;
  std::string searched_;
};

}  // namespace ft
