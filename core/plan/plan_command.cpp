#include "plan/plan_command.h"

#include "config/byte_size.h"
#include "plan/fit_changes.h"
#include "plan/run_plan.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

namespace fthost {

namespace {

std::string count_text(double n) {
  if (n >= 1e9) return fmt::format("{:.2f}B", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.1f}M", n / 1e6);
  return fmt::format("{:.0f}", n);
}

std::string seconds_text(double s) { return s >= 100 ? fmt::format("{:.0f} s", s) : fmt::format("{:.3g} s", s); }

std::string layout_text(const ParallelLayout& l) {
  std::string text = l.strategy;
  if (l.sharded)
    text += fmt::format(": sharded over {} ranks{}", l.shard,
                        l.replicate > 1 ? fmt::format(" x {} replicas", l.replicate) : "");
  if (l.tensor > 1) text += fmt::format(", tensor parallel {}", l.tensor);
  if (l.context > 1) text += fmt::format(", context parallel {}", l.context);
  if (l.expert > 1) text += fmt::format(", expert parallel {}", l.expert);
  return text;
}

std::string change_command(const FitChange& change, const Invocation& inv) {
  std::string text;
  if (change.nproc_per_node != inv.plan.nproc_per_node || change.nnodes != inv.plan.nnodes)
    text += fmt::format("--nproc-per-node {}{} ", change.nproc_per_node,
                        change.nnodes > 1 ? fmt::format(" --nnodes {}", change.nnodes) : "");
  for (const auto& o : change.overrides) text += o + " ";
  if (!text.empty()) text.pop_back();
  return text;
}

void print_text(const Invocation& inv, const RunPlan& plan, const std::vector<FitChange>& changes) {
  const ModelOutline& m = plan.model;
  const RunShape& r = plan.run;
  std::int64_t checkpointed = 0;
  for (bool c : r.checkpointed) checkpointed += c ? 1 : 0;
  std::cout << fmt::format("plan: {} on {} rank{} ({} node{} x {}), {}\n", inv.config_path, plan.layout.world,
                           plan.layout.world > 1 ? "s" : "", plan.layout.nodes, plan.layout.nodes > 1 ? "s" : "",
                           inv.plan.nproc_per_node, plan.device);
  const std::string trained =
      m.parameters_trained < m.parameters_total
          ? fmt::format(" ({} trained, the rest frozen)", count_text(static_cast<double>(m.parameters_trained)))
          : "";
  std::cout << fmt::format("  model      {}: {} parameters{}, {} layers, {}\n", m.component,
                           count_text(static_cast<double>(m.parameters_total)), trained, m.layers.size(),
                           dtype_name(r.dtype));
  std::cout << fmt::format("  layout     {}\n", layout_text(plan.layout));
  std::cout << fmt::format("  batch      {} x {} tokens per rank per micro-batch ({}), {} micro-batch{} per step\n",
                           r.batch_size, r.seq_len, plan.seq_len_source, r.accumulation,
                           r.accumulation > 1 ? "es" : "");
  if (m.image) {
    const ft::ImageTiles& image = *m.image;
    if (r.images_per_sample == 0)
      std::cout << fmt::format("  images     none: text alone ({})\n", plan.images_source);
    else
      std::cout << fmt::format(
          "  images     {} per sample ({}); {} tiles an image ({}), {} x {} pixels a tile{}; {} tokens a tile in each "
          "encoder layer\n",
          r.images_per_sample, plan.images_source, r.tiles_per_image, plan.tiles_source, image.image_size,
          image.image_size,
          image.every_image_max_tiles ? fmt::format(" (the encoder runs every image as {} tiles)", image.max_num_tiles)
                                      : "",
          image.encoder_tokens);
  }
  std::cout << fmt::format("  policy     activation checkpointing on {} of {} layers{}{}; optimizer {} ({})\n",
                           checkpointed, r.checkpointed.size(), r.offload_activations && r.on_gpu ? ", offloaded" : "",
                           r.optimizer_in_backward ? ", optimizer in backward" : "", plan.optimizer.component,
                           plan.optimizer.summary);
  std::cout << fmt::format("\nper rank at the peak, {}:\n", plan.memory.peak_phase);
  for (const auto& line : plan.memory.lines) {
    if (line.bytes <= 0) continue;
    std::cout << fmt::format("  {:<18}{:>12}  {}\n", line.name, format_bytes(line.bytes), line.detail);
  }
  std::string verdict;
  if (plan.device_memory)
    verdict = fmt::format(" of {}: {} ({:.0f}%)", format_bytes(*plan.device_memory),
                          plan.fits() ? "fits" : "DOES NOT FIT", 100.0 * plan.memory.peak / *plan.device_memory);
  std::cout << fmt::format("  {:<18}{:>12}{}\n", "peak", format_bytes(plan.memory.peak), verdict);
  if (plan.memory.host_bytes > 0)
    std::cout << fmt::format("  {:<18}{:>12}  in host memory (offloaded)\n", "host",
                             format_bytes(plan.memory.host_bytes));
  std::cout << "phases of a step (steady state):\n";
  for (const auto& phase : plan.memory.phases)
    std::cout << fmt::format("  {:<40}{:>12}\n", phase.name, format_bytes(phase.bytes));
  for (const auto& a : plan.memory.assumptions) std::cout << "  assumed: " << a << "\n";

  const StepEstimate& s = plan.step;
  std::cout << fmt::format("\nstep time, an estimate: {} ({} compute{}), {:.0f} tokens/s for the job\n",
                           seconds_text(s.step_seconds), seconds_text(s.compute_seconds),
                           s.communication_bytes > 0
                               ? fmt::format(", {} communication: {} per rank", seconds_text(s.communication_seconds),
                                             format_bytes(s.communication_bytes))
                               : "",
                           s.tokens_per_second);
  for (const auto& a : s.assumptions) std::cout << "  assumed: " << a << "\n";
  std::cout << fmt::format("checkpoint: {} on disk (model files and optimizer state), {} to write at {}\n",
                           format_bytes(plan.checkpoint_bytes), seconds_text(plan.checkpoint_seconds),
                           format_rate(inv.plan.write_bandwidth));
  if (changes.empty()) {
    if (!plan.fits()) std::cout << "\nit does not fit, and no single change fthost knows lowers the peak\n";
    return;
  }
  std::cout << "\nit does not fit; changes that lower the peak, cheapest first (each planned again):\n";
  for (const auto& c : changes)
    std::cout << fmt::format("  {:>12}  {:<5} {}\n      {}\n", format_bytes(c.peak), c.fits ? "fits" : "",
                             c.description, change_command(c, inv));
}

void print_json(const Invocation& inv, const RunPlan& plan, const std::vector<FitChange>& changes) {
  nlohmann::json j;
  j["config"] = inv.config_path;
  j["world"] = plan.layout.world;
  j["nodes"] = plan.layout.nodes;
  j["device"] = plan.device;
  j["device_memory_bytes"] = plan.device_memory ? nlohmann::json(*plan.device_memory) : nlohmann::json(nullptr);
  j["fits"] = plan.device_memory ? nlohmann::json(plan.fits()) : nlohmann::json(nullptr);
  j["model"] = {{"component", plan.model.component},
                {"parameters", plan.model.parameters_total},
                {"trained_parameters", plan.model.parameters_trained},
                {"layers", plan.model.layers.size()}};
  j["layout"] = {{"strategy", plan.layout.strategy},   {"shard", plan.layout.shard},
                 {"replicate", plan.layout.replicate}, {"tensor", plan.layout.tensor},
                 {"context", plan.layout.context},     {"expert", plan.layout.expert}};
  if (plan.model.image)
    j["images"] = {
        {"per_sample", plan.run.images_per_sample},    {"per_sample_source", plan.images_source},
        {"tiles_per_image", plan.run.tiles_per_image}, {"tiles_source", plan.tiles_source},
        {"image_size", plan.model.image->image_size},  {"encoder_tokens_per_tile", plan.model.image->encoder_tokens}};
  j["batch"] = {{"batch_size", plan.run.batch_size},
                {"seq_len", plan.run.seq_len},
                {"seq_len_source", plan.seq_len_source},
                {"gradient_accumulation_steps", plan.run.accumulation},
                {"dtype", dtype_name(plan.run.dtype)}};
  const MemoryPlan& mem = plan.memory;
  j["memory"] = {{"peak_bytes", mem.peak},
                 {"peak_phase", mem.peak_phase},
                 {"runtime_bytes", mem.runtime},
                 {"parameters_bytes", mem.parameters},
                 {"gradients_bytes", mem.gradients},
                 {"optimizer_state_bytes", mem.optimizer_state},
                 {"activations_bytes", mem.activations},
                 {"image_activations_bytes", mem.image_activations},
                 {"logits_bytes", mem.logits},
                 {"host_bytes", mem.host_bytes}};
  for (const auto& line : mem.lines) j["memory"]["at_peak"].push_back({{"name", line.name}, {"bytes", line.bytes}});
  for (const auto& phase : mem.phases) j["memory"]["phases"].push_back({{"name", phase.name}, {"bytes", phase.bytes}});
  const StepEstimate& s = plan.step;
  j["step"] = {{"seconds", s.step_seconds},
               {"compute_seconds", s.compute_seconds},
               {"communication_seconds", s.communication_seconds},
               {"communication_bytes", s.communication_bytes},
               {"flops_per_rank", s.flops_per_rank},
               {"image_flops_per_rank", s.image_flops_per_rank},
               {"tokens_per_second", s.tokens_per_second},
               {"assumptions", s.assumptions}};
  j["checkpoint"] = {{"bytes", plan.checkpoint_bytes}, {"write_seconds", plan.checkpoint_seconds}};
  j["changes"] = nlohmann::json::array();
  for (const auto& c : changes)
    j["changes"].push_back({{"description", c.description},
                            {"overrides", c.overrides},
                            {"nproc_per_node", c.nproc_per_node},
                            {"nnodes", c.nnodes},
                            {"peak_bytes", c.peak},
                            {"fits", c.fits}});
  std::cout << j.dump(2) << "\n";
}

}  // namespace

int run_plan_command(const Invocation& inv) {
  const RunPlan plan = plan_invocation(inv);
  const std::vector<FitChange> changes = changes_that_fit(inv, plan);
  if (inv.data.json)
    print_json(inv, plan, changes);
  else
    print_text(inv, plan, changes);
  return plan.fits() ? 0 : 1;
}

}  // namespace fthost
