#include <ft_kernels/parallel_loops.h>

namespace ft_kernels {
namespace {
struct FusedCpuKernels;
}  // namespace

int threads_in_parallel_loops() { return threads_running_parallel_loops<FusedCpuKernels>(); }

}  // namespace ft_kernels
