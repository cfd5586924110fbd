#include "train/heap_reuse.h"

#include <climits>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace fthost {

HeapReuse keep_freed_memory_for_reuse() {
  HeapReuse result;
  if (const char* setting = std::getenv("FT_HEAP_REUSE"); setting && std::string(setting) == "0") return result;
  // jemalloc (the fthost executable's allocator) keeps freed pages for reuse itself; glibc's
  // settings would configure an allocator nothing calls.
  if (dlsym(RTLD_DEFAULT, "mallctl") != nullptr) return result;
#if defined(__GLIBC__)
  // Both before the first large allocation is freed: glibc's dynamic thresholds stop adjusting
  // once set. A block the heap cannot grow for (or a thread arena's) still falls back to mmap.
  result.applied = mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1;
#endif
  return result;
}

}  // namespace fthost
