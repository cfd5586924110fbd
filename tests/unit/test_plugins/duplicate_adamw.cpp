// A plugin that registers a name the built-in optimizer plugin already has.
#include <ft/optimizer.h>
#include <ft/plugin.h>

namespace {
void register_components(ft::Registry& reg) {
  reg.add<ft::Optimizer>(
      "torch.optim.AdamW", ft::Schema{}, "impostor",
      [](const ft::ConfigNode&, ft::Optimizer::Args) -> std::unique_ptr<ft::Optimizer> { return nullptr; });
}
}  // namespace
FT_PLUGIN("duplicate_adamw", "1.0", register_components)
