// Error types that cross the plugin boundary. Every message is complete and user-facing:
// it names the config file and dotted key, or the plugin library, and what was expected.
#pragma once

#include <ft/export.h>

#include <stdexcept>
#include <string>

namespace ft {

// The destructors are defined in libftsdk, not inline: an exception thrown by a plugin may
// outlive the plugin (the host catches it after the object that threw is gone and its library
// unloaded), and its vtable and destructor must not live in that library.
class FT_API Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  ~Error() override;
};

// A problem with the user's configuration: `run.toml: optimizer.lr: expected a number, got string "fast"`.
class FT_API ConfigError : public Error {
 public:
  using Error::Error;
  ~ConfigError() override;
};

// A problem loading or registering a plugin library.
class FT_API PluginError : public Error {
 public:
  using Error::Error;
  ~PluginError() override;
};

}  // namespace ft
