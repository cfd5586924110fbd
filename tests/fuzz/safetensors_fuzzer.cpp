// Fuzz target: the safetensors reader on an arbitrary file: the u64 header length, the JSON
// header and its validation, then every tensor it accepted (read back through the mapping).
//
// A malformed file must be refused with ft::Error naming it; any other exception, a crash or a
// sanitizer report is a bug.
#include <ft/errors.h>
#include <safetensors.h>

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>

#include "fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static fttest::FuzzInputFile file(".safetensors");
  const std::string& path = file.write(data, size);
  try {
    const ft_checkpointers::SafetensorsFile st(path);
    for (const auto& record : st.records()) {
      const at::Tensor t = st.tensor(record);
      // Touch every byte the reader claims belongs to the tensor.
      if (t.numel() > 0) (void)t.view({-1}).to(at::kDouble).sum().item<double>();
    }
    for (const auto& [key, value] : st.metadata()) (void)(key.size() + value.size());
  } catch (const ft::Error&) {
  }
  return 0;
}
