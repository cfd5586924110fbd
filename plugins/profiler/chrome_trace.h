// Chrome trace event JSON (chrome://tracing, Perfetto, TensorBoard's profiler plugin) and a
// per-operator summary table, made from the operator events LibTorch's profiler collected.
// Used when LibTorch was built without Kineto, whose own exporter would otherwise write it.
#pragma once

#include <torch/csrc/autograd/profiler_kineto.h>

#include <string>
#include <vector>

namespace ft_profiler {

// {"traceEvents": [...]}: one complete ("X") event per operator with its shapes, dtypes, flops
// and stack when recorded, one instant ("i") event per [memory] allocation record.
std::string chrome_trace_json(const std::vector<torch::autograd::profiler::KinetoEvent>& events, int rank);

// Operators by total time (like key_averages().table()): name, calls, total and mean time.
std::string operator_summary_table(const std::vector<torch::autograd::profiler::KinetoEvent>& events,
                                   std::size_t row_limit);

}  // namespace ft_profiler
