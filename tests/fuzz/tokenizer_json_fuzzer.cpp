// Fuzz target: Hugging Face tokenizer.json loading, then a round trip through the tokenizer it
// built (encode a fixed text with every pipeline step the file asked for, decode the ids).
//
// A tokenizer.json this reader cannot use must be refused with ft::Error naming the file and the
// JSON path; any other exception, a crash or a sanitizer report is a bug.
#include <ft/errors.h>

#include <cstddef>
#include <cstdint>

#include "bpe_loaders.h"
#include "fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static fttest::FuzzInputFile file("-tokenizer.json");
  const std::string& path = file.write(data, size);
  try {
    const auto tokenizer = ft_tok::load_hf_tokenizer_json(path);
    const auto ids = tokenizer->encode("Hello world! <s> caf\xC3\xA9 \xE2\x96\x81x 123\n\tend</s>");
    (void)tokenizer->decode(ids);
    for (const auto& added : tokenizer->added_tokens()) (void)tokenizer->token_id(added.content);
  } catch (const ft::Error&) {
  }
  return 0;
}
