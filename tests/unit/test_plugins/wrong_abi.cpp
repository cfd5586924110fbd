// A plugin built for a future ABI major version; the host must refuse it before registering.
#include <ft/plugin.h>

namespace {
void register_nothing(ft::Registry&) { throw std::runtime_error("must never be called"); }
const ft::PluginInfo* info() {
  static const ft::PluginInfo i{FT_ABI_MAJOR + 1, 0, "wrong_abi", "9.9", ft::this_build_fingerprint(),
                                &register_nothing};
  return &i;
}
}  // namespace
BOOST_DLL_ALIAS(info, fthost_plugin_v1)
