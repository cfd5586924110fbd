// Tokenizer interface (`torchtune.models.*_tokenizer`). Datasets receive one through their Args.
#pragma once

#include <ft/kind.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ft {

class Tokenizer {
 public:
  static constexpr Kind kind = Kind::Tokenizer;
  struct Args {};

  virtual ~Tokenizer() = default;
  virtual std::vector<std::int64_t> encode(std::string_view text, bool add_bos, bool add_eos) const = 0;
  virtual std::string decode(const std::vector<std::int64_t>& ids) const = 0;
  virtual std::int64_t vocab_size() const = 0;
  virtual std::int64_t bos_id() const = 0;
  virtual std::int64_t eos_id() const = 0;
  virtual std::int64_t pad_id() const = 0;
  // Id of a special token such as "<|start_header_id|>", if the vocabulary has it.
  virtual std::optional<std::int64_t> special_token(std::string_view text) const = 0;
};

}  // namespace ft
