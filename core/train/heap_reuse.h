// Keeps the memory a training step frees in the process, for the next step to reuse. Every step
// allocates and frees the same activations, logits and gradients; by default glibc serves the
// large ones (above its mmap threshold, at most 32 MiB) with fresh mmaps and returns the top of
// its heap to the system after each free, so every step pays page faults and zeroing for memory
// it had a moment ago (about 22,000 faults per step of the 5M benchmark model).
#pragma once

namespace fthost {

struct HeapReuse {
  // false where the C library has no such settings (not glibc), and under jemalloc (the fthost
  // executable's allocator), which keeps freed pages for reuse itself (its dirty-page decay).
  bool applied = false;
};

// Serves every allocation from the heap (no mmap per large block) and never trims the heap
// below 2 GiB of free top. The peak resident memory stays what the live tensors need (plus the
// heap's fragmentation); memory freed after the peak stays resident until the process exits.
// FT_HEAP_REUSE=0 in the environment leaves glibc's defaults (for measuring what this buys).
HeapReuse keep_freed_memory_for_reuse();

}  // namespace fthost
