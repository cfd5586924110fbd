#include <ft/errors.h>

namespace ft {

// Key functions: they anchor the error types' vtables and type info in libftsdk.
Error::~Error() = default;
ConfigError::~ConfigError() = default;
PluginError::~PluginError() = default;

}  // namespace ft
