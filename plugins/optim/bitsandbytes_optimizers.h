// bitsandbytes' Adam family as torchtune's single-device configs name it
// (bitsandbytes.optim.AdamW8bit, Adam8bit, PagedAdamW8bit, PagedAdamW, PagedAdamW32bit): 8-bit
// blockwise moments for tensors of min_8bit_size values or more, float32 moments below it and for
// the 32-bit variants. Paged state is CUDA unified memory; on the CPU it is ordinary memory.
#pragma once

#include <ft/registry.h>

namespace ftoptim {

void register_bitsandbytes_optimizers(ft::Registry& reg);

}  // namespace ftoptim
