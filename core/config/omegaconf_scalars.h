// What an unquoted YAML scalar means to OmegaConf, torchtune's config library: YAML 1.1's types
// as PyYAML's SafeLoader resolves them, with OmegaConf's wider float pattern (so `2e-5`, `1e-5`,
// `.5` and `5e-05` are numbers where YAML 1.1 reads strings) and without timestamps. YAML files
// and command-line override values are both read this way, so they mean what they mean to torchtune.
#pragma once

#include <cstdint>
#include <string>

namespace fthost {

struct PlainScalar {
  enum class Type { Null, Bool, Int, Float, String };
  Type type = Type::String;
  bool boolean = false;
  std::int64_t integer = 0;
  double number = 0.0;
  std::string text;  // the scalar as written
};

// Resolves `text` as OmegaConf does: null (`~`, `null`, `Null`, `NULL`, empty), booleans
// (`true`/`false`/`yes`/`no`/`on`/`off` in three cases), integers (decimal, `0x` hex, `0b` binary, base 60 `1:30`,
// YAML 1.1 octal `017`, `_` separators), floats (`1.5`, `2e-5`, `.5`, `.inf`, `.nan`), otherwise a
// string. Throws ft::ConfigError (without a location) for an integer outside 64 bits.
PlainScalar resolve_plain_scalar(const std::string& text);

}  // namespace fthost
