// A plugin claiming another LibTorch build; the host must refuse it and print both sides.
#include <ft/plugin.h>

namespace {
void register_nothing(ft::Registry&) { throw std::runtime_error("must never be called"); }
const ft::PluginInfo* info() {
  static const ft::PluginInfo i{
      FT_ABI_MAJOR,     FT_ABI_MINOR, "wrong_fingerprint", "1.0", ft::BuildFingerprint{"2.5.1", 1, 1, "gcc 13"},
      &register_nothing};
  return &i;
}
}  // namespace
BOOST_DLL_ALIAS(info, fthost_plugin_v1)
