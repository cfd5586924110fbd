#include "plan/fit_changes.h"

#include <ft/errors.h>

#include <fmt/format.h>

#include <optional>

namespace fthost {

namespace {

struct Candidate {
  std::string description;
  std::vector<std::string> overrides;
  int nproc_per_node;
  int nnodes;
};

// The plan with `change` applied; nullopt when the config's rules refuse the change.
std::optional<RunPlan> replan(const Invocation& inv, const Candidate& change) {
  Invocation changed = inv;
  changed.args.insert(changed.args.end(), change.overrides.begin(), change.overrides.end());
  changed.plan.nproc_per_node = change.nproc_per_node;
  changed.plan.nnodes = change.nnodes;
  try {
    return plan_invocation(changed, /*with_step=*/false);
  } catch (const ft::ConfigError&) {
    return std::nullopt;
  }
}

FitChange outcome(const Candidate& change, const RunPlan& plan) {
  return FitChange{
      change.description, change.overrides, change.nproc_per_node, change.nnodes, plan.memory.peak, plan.fits(), false};
}

}  // namespace

std::vector<FitChange> changes_that_fit(const Invocation& inv, const RunPlan& plan) {
  std::vector<FitChange> out;
  if (plan.fits()) return out;
  const int nproc = inv.plan.nproc_per_node, nnodes = inv.plan.nnodes;
  const RunShape& run = plan.run;
  std::vector<Candidate> candidates;
  bool all_checkpointed = !run.checkpointed.empty();
  for (bool c : run.checkpointed) all_checkpointed = all_checkpointed && c;
  if (!all_checkpointed)
    candidates.push_back(
        {"activation checkpointing on every layer", {"enable_activation_checkpointing=true"}, nproc, nnodes});

  std::vector<Candidate> accepted;  // what fits or helps, for the combination
  const auto try_change = [&](const Candidate& change) -> bool {
    const auto changed = replan(inv, change);
    // Refused by the config's rules, or no help: not a change to suggest.
    if (!changed || changed->memory.peak >= plan.memory.peak) return false;
    out.push_back(outcome(change, *changed));
    accepted.push_back(change);
    return changed->fits();
  };
  for (const auto& c : candidates) try_change(c);

  // The largest micro-batch that fits, the step's samples kept by accumulating more.
  for (std::int64_t b = run.batch_size / 2; b >= 1; b /= 2) {
    if (run.batch_size % b != 0) continue;
    const Candidate smaller{fmt::format("micro-batches of {} with {} accumulation steps (the same samples per step)", b,
                                        run.accumulation * run.batch_size / b),
                            {fmt::format("batch_size={}", b),
                             fmt::format("gradient_accumulation_steps={}", run.accumulation * run.batch_size / b)},
                            nproc,
                            nnodes};
    const auto changed = replan(inv, smaller);
    if (!changed) break;
    if (changed->fits() || b == 1) {
      if (changed->memory.peak < plan.memory.peak) {
        out.push_back(outcome(smaller, *changed));
        accepted.push_back(smaller);
      }
      break;
    }
  }
  if (!run.optimizer_in_backward)
    try_change(
        {"the optimizer in backward (each gradient freed by its step)", {"optimizer_in_bwd=true"}, nproc, nnodes});
  const std::string& optimizer = plan.optimizer.component;
  // fthost's 8-bit states are for float32 parameters on the CPU (docs/parity.md).
  if ((optimizer == "torch.optim.AdamW" || optimizer == "torch.optim.Adam") && !run.on_gpu && run.dtype == c10::kFloat)
    try_change({"8-bit optimizer states", {"optimizer._component_=bitsandbytes.optim.AdamW8bit"}, nproc, nnodes});
  if (run.on_gpu && plan.layout.sharded && !plan.layout.cpu_offload)
    if (!try_change({"FSDP CPU offload (shards, gradients and the step in host memory)",
                     {"parallelism.cpu_offload=true"},
                     nproc,
                     nnodes}))
      try_change({"FSDP CPU offload (shards, gradients and the step in host memory)",
                  {"fsdp_cpu_offload=true"},
                  nproc,
                  nnodes});
  // More ranks to shard over: up to 8 GPUs per node, then more nodes (a CPU's ranks share its memory).
  for (int more = 2; more <= 64; more *= 2) {
    const int per_node = run.on_gpu ? std::min(8, nproc * more) : nproc;
    const int nodes = nnodes * more * nproc / per_node;
    if (per_node * nodes == nproc * nnodes) continue;
    const Candidate ranks{
        fmt::format("{} ranks ({} node{} x {})", per_node * nodes, nodes, nodes > 1 ? "s" : "", per_node),
        {},
        per_node,
        nodes};
    const auto changed = replan(inv, ranks);
    if (!changed) break;
    if (changed->fits() || more == 64) {
      if (changed->memory.peak < plan.memory.peak) out.push_back(outcome(ranks, *changed));
      break;
    }
  }
  const int world = nproc * nnodes;
  for (int t = 2; t <= 8 && t <= (run.on_gpu ? nproc : world); t *= 2) {
    if (world % t != 0 || plan.layout.tensor != 1) break;
    Candidate split{
        fmt::format("tensor parallelism over {} ranks", t), {fmt::format("tensor_parallel_dim={}", t)}, nproc, nnodes};
    if (!plan.has_tensor_parallel_plan)
      split.overrides.emplace_back("tensor_parallel_plan._component_=fthost.tensor_parallel_plan");
    if (try_change(split)) break;
  }
  for (int c = 2; c <= 8 && c <= world; c *= 2) {
    if (world % c != 0 || plan.layout.context != 1) break;
    if (try_change({fmt::format("context parallelism over {} ranks", c),
                    {fmt::format("context_parallel_dim={}", c)},
                    nproc,
                    nnodes}))
      break;
  }

  bool any_fits = false;
  for (const auto& change : out) any_fits = any_fits || change.fits;
  if (!any_fits && accepted.size() > 1) {
    // None alone: the cheap ones together, in order, until the plan fits.
    Candidate together{"", {}, nproc, nnodes};
    for (const auto& change : accepted) {
      together.description += (together.description.empty() ? "" : " + ") + change.description;
      together.overrides.insert(together.overrides.end(), change.overrides.begin(), change.overrides.end());
      const auto changed = replan(inv, together);
      if (!changed) continue;
      if (changed->fits()) {
        FitChange combined = outcome(together, *changed);
        combined.combined = true;
        out.push_back(combined);
        break;
      }
    }
  }
  return out;
}

}  // namespace fthost
