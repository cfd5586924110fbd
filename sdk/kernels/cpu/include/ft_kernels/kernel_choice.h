// What FT_CPU_KERNELS asks for and what this CPU can run: read in one place for every fused CPU
// kernel, the model's and losses' row kernels and the optimizers' update loops alike.
//
// FT_CPU_KERNELS: unset or "avx2" (the fastest copy this CPU runs), "baseline" (the portable
// copy), or "aten" (no fused kernel: every operation takes LibTorch's reference path, for
// measuring what the kernels bring). Any other value is refused with ft::Error, not ignored.
#pragma once

namespace ft_kernels {

// False when FT_CPU_KERNELS=aten: the fused operations then run LibTorch's reference ops.
bool fused_kernels_enabled();

// True when FT_CPU_KERNELS=baseline: the portable copy of each kernel runs even on an AVX2 CPU.
bool portable_kernels_forced();

// Whether this CPU has AVX2 (and, for cpu_has_fma, FMA); false off x86-64.
bool cpu_has_avx2();
bool cpu_has_fma();

}  // namespace ft_kernels
