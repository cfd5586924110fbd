// Whether the fused CPU kernels' at::parallel_for loops really run on LibTorch's intra-op threads.
// at::parallel_for is a header template: a library compiled without OpenMP gets the copy that runs
// every loop on the calling thread, silently (cmake/FthostLibTorch.cmake, fthost::libtorch_openmp).
#pragma once

namespace ft_kernels {

// How many distinct threads ran an at::parallel_for of many small items, compiled as the fused
// kernels are: at::get_num_threads() when they run in parallel, 1 when they cannot.
int threads_in_parallel_loops();

}  // namespace ft_kernels
