// A plugin whose registration fails; the host reports the plugin's message with its library.
#include <ft/plugin.h>

namespace {
void register_components(ft::Registry&) { throw std::runtime_error("acme license file not found"); }
}  // namespace
FT_PLUGIN("throwing_registration", "1.0", register_components)
