#include <ft/errors.h>
#include <ft/nn/attention.h>
#include <ft/nn/context_parallel.h>
#include <ft/nn/expert_parallel.h>
#include <ft/torch_compat.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <array>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ft::nn {

namespace {

// Where every position of the global rows sits: its document (0 throughout an unpacked row) and
// its position within that document. Rows: 1 when every row is one sequence, else the batch's.
struct SequenceLayout {
  int size = 1, rank = 0;
  std::int64_t chunk = 0;  // positions per chunk; 2 * size chunks per row
  bool packed = false;
  at::Tensor document, position;  // [rows, seq_len] int64

  std::int64_t chunk_held(int holder, int which) const { return context_parallel_chunk(size, holder, which); }
  at::Tensor chunk_of(const at::Tensor& per_position, std::int64_t chunk_id) const {
    return per_position.narrow(1, chunk_id * chunk, chunk);
  }
};

SequenceLayout layout_of(std::int64_t local_len, const DocumentLengths& documents, const ContextParallel& context,
                         const at::Device& device) {
  SequenceLayout layout;
  layout.size = context.group->size();
  layout.rank = context.group->rank();
  const std::int64_t seq_len = local_len * layout.size;
  if (local_len % 2 != 0)
    throw ft::Error("context parallelism: each rank holds two equal chunks, but this rank has " +
                    std::to_string(local_len) + " positions");
  layout.chunk = local_len / 2;
  const at::TensorOptions longs = at::TensorOptions(at::kLong);
  if (documents.empty()) {
    layout.document = at::zeros({1, seq_len}, longs);
    layout.position = at::arange(seq_len, longs).unsqueeze(0);
  } else {
    layout.packed = true;
    const auto rows = static_cast<std::int64_t>(documents.size());
    layout.document = at::empty({rows, seq_len}, longs);
    layout.position = at::empty({rows, seq_len}, longs);
    for (std::int64_t row = 0; row < rows; ++row) {
      auto* doc = layout.document[row].data_ptr<std::int64_t>();
      auto* pos = layout.position[row].data_ptr<std::int64_t>();
      std::int64_t start = 0, id = 0;
      for (const std::int64_t length : documents[static_cast<std::size_t>(row)]) {
        if (length < 0 || start + length > seq_len) break;
        for (std::int64_t i = 0; i < length; ++i) {
          doc[start + i] = id;
          pos[start + i] = i;
        }
        start += length;
        ++id;
      }
      if (start != seq_len)
        throw ft::Error("context parallelism: row " + std::to_string(row) + "'s document lengths do not sum to its " +
                        std::to_string(seq_len) + " positions (" + std::to_string(local_len) + " on each of " +
                        std::to_string(layout.size) + " ranks)");
    }
  }
  layout.document = layout.document.to(device);
  layout.position = layout.position.to(device);
  return layout;
}

// Which keys of one chunk the queries of another may see.
struct ChunkPair {
  enum class Kind { None, All, Causal, Masked };
  Kind kind = Kind::None;
  at::Tensor additive;           // Masked: [rows, 1, c, c], 0 where allowed, -inf elsewhere
  at::Tensor rows_without_keys;  // Masked: [rows, 1, c], queries that see none of these keys
};

ChunkPair chunk_pair(const SequenceLayout& layout, std::int64_t query_chunk, std::int64_t key_chunk,
                     const AttentionMask& mask, at::ScalarType dtype) {
  ChunkPair pair;
  if (!layout.packed && mask.kind == AttentionMask::Kind::Causal) {
    // Plain causal attention needs no mask tensor: a chunk sees every earlier chunk whole and
    // itself causally.
    pair.kind = key_chunk < query_chunk    ? ChunkPair::Kind::All
                : key_chunk == query_chunk ? ChunkPair::Kind::Causal
                                           : ChunkPair::Kind::None;
    return pair;
  }
  const at::Tensor same_document = layout.chunk_of(layout.document, query_chunk)
                                       .unsqueeze(2)
                                       .eq(layout.chunk_of(layout.document, key_chunk).unsqueeze(1));
  const at::Tensor allowed =
      same_document.logical_and(attention_allowed(mask, layout.chunk_of(layout.position, query_chunk).unsqueeze(2),
                                                  layout.chunk_of(layout.position, key_chunk).unsqueeze(1)));
  if (!allowed.any().item<bool>()) return pair;
  if (allowed.all().item<bool>()) {
    pair.kind = ChunkPair::Kind::All;
    return pair;
  }
  pair.kind = ChunkPair::Kind::Masked;
  pair.additive = at::zeros(allowed.sizes(), allowed.options().dtype(dtype))
                      .masked_fill(allowed.logical_not(), -std::numeric_limits<double>::infinity())
                      .unsqueeze(1);
  pair.rows_without_keys = allowed.any(-1).logical_not().unsqueeze(1);
  return pair;
}

// Keys and values of the query's heads: the CPU kernel takes grouped-query attention as it is,
// the CUDA one wants one key/value head per query head.
at::Tensor heads_for_kernel(const at::Tensor& kv, std::int64_t query_heads) {
  const std::int64_t group = query_heads / kv.size(1);
  return kv.is_cpu() || group == 1 ? kv : kv.repeat_interleave(group, 1);
}

at::Tensor grads_per_kv_head(const at::Tensor& grad, std::int64_t kv_heads) {
  if (grad.size(1) == kv_heads) return grad;
  return grad.unflatten(1, {kv_heads, grad.size(1) / kv_heads}).sum(2);
}

compat::AttentionWithLse attend_chunk(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const ChunkPair& pair, double scale) {
  std::optional<at::Tensor> mask;
  if (pair.kind == ChunkPair::Kind::Masked) mask = pair.additive;
  compat::AttentionWithLse result =
      compat::attention_with_lse(q, heads_for_kernel(k, q.size(1)), heads_for_kernel(v, q.size(1)), mask,
                                 pair.kind == ChunkPair::Kind::Causal, scale);
  // CUDA's kernel pads the log-sum-exp's positions; a query that sees none of these keys has no
  // log-sum-exp (the kernel reports 0 and an output of 0).
  result.lse = result.lse.narrow(2, 0, q.size(2)).to(at::kFloat);
  if (pair.kind == ChunkPair::Kind::Masked)
    result.lse = result.lse.masked_fill(pair.rows_without_keys, -std::numeric_limits<float>::infinity());
  return result;
}

// Running softmax merge: `out` and `lse` (float32) absorb another block's normalised output and
// log-sum-exp. A row with no keys yet has lse = -inf and weight 0.
void merge_into(at::Tensor& out, at::Tensor& lse, const at::Tensor& block_out, const at::Tensor& block_lse) {
  const at::Tensor merged = at::logaddexp(lse, block_lse);
  const at::Tensor keep = at::exp(lse - merged).nan_to_num(0.0).unsqueeze(-1);
  const at::Tensor add = at::exp(block_lse - merged).nan_to_num(0.0).unsqueeze(-1);
  out = out * keep + block_out.to(at::kFloat) * add;
  lse = merged;
}

// The next rank's block arrives, this one goes to the previous rank's successor: rank r sends to
// r + 1 and receives from r - 1.
at::Tensor passed_round_ring(const at::Tensor& block, ft::Collectives& group) {
  const int n = group.size(), r = group.rank();
  std::vector<std::int64_t> input_splits(static_cast<std::size_t>(n), 0), output_splits(input_splits);
  input_splits[static_cast<std::size_t>((r + 1) % n)] = 1;
  output_splits[static_cast<std::size_t>((r + n - 1) % n)] = 1;
  const at::Tensor rows = block.contiguous().unsqueeze(0);
  at::Tensor received = at::empty_like(rows);
  group.all_to_all(received, rows, output_splits, input_splits);
  return received.squeeze(0);
}

// Calls visit(source_rank, keys_and_values [2, b, kv_heads, s, hd]) for every rank's block,
// moving the blocks as `context.rotate` says. With `travelling` (backward), a float32 buffer of
// the block's size rides round the ring with each block (visit adds to it) and returns to the
// block's owner, which gets back the sum every rank added for its block.
template <class Visit>
at::Tensor visit_every_block(const at::Tensor& keys_and_values, const ContextParallel& context, bool travelling,
                             Visit visit) {
  ft::Collectives& group = *context.group;
  const int n = group.size(), r = group.rank();
  if (context.rotate == RotateMethod::AllGather) {
    const at::Tensor shard = keys_and_values.contiguous();
    std::vector<std::int64_t> shape{n};
    for (const std::int64_t d : shard.sizes()) shape.push_back(d);
    at::Tensor every = at::empty(shape, shard.options());
    group.all_gather(every, shard);
    at::Tensor every_sum = travelling ? at::zeros(shape, shard.options().dtype(at::kFloat)) : at::Tensor();
    for (int j = 0; j < n; ++j) {
      at::Tensor sum = travelling ? every_sum[j] : at::Tensor();
      visit(j, every[j], sum);
    }
    if (!travelling) return {};
    at::Tensor mine = at::empty(shard.sizes(), every_sum.options());
    group.reduce_scatter_sum(mine, every_sum);
    return mine;
  }
  at::Tensor block = keys_and_values;
  at::Tensor sum =
      travelling ? at::zeros(keys_and_values.sizes(), keys_and_values.options().dtype(at::kFloat)) : at::Tensor();
  for (int step = 0; step < n; ++step) {
    visit((r - step + n) % n, block, sum);
    if (step + 1 < n) {
      block = passed_round_ring(block, group);
      if (travelling) sum = passed_round_ring(sum, group);
    }
  }
  // The sum now holds every rank's share for the block of rank r + 1: one more pass takes it home.
  return travelling ? passed_round_ring(sum, group) : at::Tensor();
}

struct RingInputs {
  SequenceLayout layout;
  AttentionScores scores;
  ContextParallel context;
  std::array<std::int64_t, 2> query_chunks{};
};

// Backward of the fused ring attention: each chunk pair's gradients from the kernel's backward,
// given the output and log-sum-exp of the whole sequence, so each pair's share is exact; the keys'
// and values' shares go back to the ranks that hold them.
class RingAttentionBackward final : public torch::autograd::Node {
 public:
  RingAttentionBackward(RingInputs inputs, at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor out, at::Tensor lse)
      : in_(std::move(inputs)),
        q_(std::move(q)),
        k_(std::move(k)),
        v_(std::move(v)),
        out_(std::move(out)),
        lse_(std::move(lse)) {}

  std::string name() const override { return "ft::RingAttentionBackward"; }

  void release_variables() override { q_ = k_ = v_ = out_ = lse_ = at::Tensor(); }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    // Every rank takes part even where its output got no gradient: its peers wait for its blocks.
    const at::Tensor grad_out = grads.at(0).defined() ? grads.at(0) : at::zeros_like(out_);
    const std::int64_t c = in_.layout.chunk;
    const std::int64_t kv_heads = k_.size(1);
    std::array<at::Tensor, 2> grad_q{at::zeros(q_.narrow(2, 0, c).sizes(), q_.options().dtype(at::kFloat)),
                                     at::zeros(q_.narrow(2, 0, c).sizes(), q_.options().dtype(at::kFloat))};
    const at::Tensor grad_kv = visit_every_block(
        at::stack({k_, v_}), in_.context, /*travelling=*/true,
        [&](int source, const at::Tensor& keys_and_values, at::Tensor& grad_sum) {
          for (int a = 0; a < 2; ++a) {
            const at::Tensor q = q_.narrow(2, a * c, c);
            compat::AttentionWithLse forward{
                out_.narrow(2, a * c, c).contiguous(), lse_.narrow(2, a * c, c).contiguous(), {}, {}};
            const at::Tensor grad = grad_out.narrow(2, a * c, c).contiguous();
            for (int y = 0; y < 2; ++y) {
              const ChunkPair pair = chunk_pair(in_.layout, in_.query_chunks[static_cast<std::size_t>(a)],
                                                in_.layout.chunk_held(source, y), in_.scores.mask, q.scalar_type());
              if (pair.kind == ChunkPair::Kind::None) continue;
              const at::Tensor k = keys_and_values[0].narrow(2, y * c, c);
              const at::Tensor v = keys_and_values[1].narrow(2, y * c, c);
              std::optional<at::Tensor> mask;
              if (pair.kind == ChunkPair::Kind::Masked) mask = pair.additive;
              const compat::AttentionGradients g = compat::attention_with_lse_backward(
                  grad, q, heads_for_kernel(k, q.size(1)), heads_for_kernel(v, q.size(1)), mask,
                  pair.kind == ChunkPair::Kind::Causal, in_.scores.scale, forward);
              grad_q[static_cast<std::size_t>(a)] += g.q;
              grad_sum[0].narrow(2, y * c, c) += grads_per_kv_head(g.k, kv_heads);
              grad_sum[1].narrow(2, y * c, c) += grads_per_kv_head(g.v, kv_heads);
            }
          }
        });
    return {at::cat({grad_q[0], grad_q[1]}, 2).to(q_.scalar_type()), grad_kv[0].to(k_.scalar_type()),
            grad_kv[1].to(v_.scalar_type())};
  }

 private:
  RingInputs in_;
  at::Tensor q_, k_, v_, out_, lse_;
};

at::Tensor fused_ring_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, RingInputs in) {
  const std::int64_t c = in.layout.chunk;
  const at::Tensor qd = q.detach(), kd = k.detach(), vd = v.detach();
  std::array<at::Tensor, 2> out, lse;
  for (std::size_t a = 0; a < 2; ++a) {
    out[a] = at::zeros(qd.narrow(2, 0, c).sizes(), qd.options().dtype(at::kFloat));
    lse[a] =
        at::full({qd.size(0), qd.size(1), c}, -std::numeric_limits<float>::infinity(), qd.options().dtype(at::kFloat));
  }
  visit_every_block(
      at::stack({kd, vd}), in.context, /*travelling=*/false,
      [&](int source, const at::Tensor& keys_and_values, at::Tensor&) {
        for (int a = 0; a < 2; ++a) {
          const at::Tensor q_chunk = qd.narrow(2, a * c, c);
          for (int y = 0; y < 2; ++y) {
            const ChunkPair pair = chunk_pair(in.layout, in.query_chunks[static_cast<std::size_t>(a)],
                                              in.layout.chunk_held(source, y), in.scores.mask, qd.scalar_type());
            if (pair.kind == ChunkPair::Kind::None) continue;
            const compat::AttentionWithLse block =
                attend_chunk(q_chunk, keys_and_values[0].narrow(2, y * c, c), keys_and_values[1].narrow(2, y * c, c),
                             pair, in.scores.scale);
            merge_into(out[static_cast<std::size_t>(a)], lse[static_cast<std::size_t>(a)], block.out, block.lse);
          }
        }
      });
  at::Tensor result = at::cat({out[0], out[1]}, 2).to(q.scalar_type());
  if (!at::GradMode::is_enabled() || !(q.requires_grad() || k.requires_grad() || v.requires_grad())) return result;
  auto node = compat::make_autograd_node<RingAttentionBackward>(std::move(in), qd, kd, vd, result.detach(),
                                                                at::cat({lse[0], lse[1]}, 2));
  node->set_next_edges(torch::autograd::collect_next_edges(q, k, v));
  torch::autograd::set_history(result, node);
  return result;
}

// Soft-capped scores have no fused kernel: every rank's keys and values are brought together by
// differentiable exchanges (the rotate method's), and attention runs step by step over the whole
// sequence, as it does unsplit.
at::Tensor explicit_ring_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                   const RingInputs& in) {
  const auto& group = in.context.group;
  const int n = group->size(), r = group->rank();
  const at::Tensor keys_and_values = at::stack({k, v});
  std::vector<at::Tensor> blocks(static_cast<std::size_t>(n));
  if (in.context.rotate == RotateMethod::AllGather) {
    const std::vector<std::int64_t> one_each(static_cast<std::size_t>(n), 1);
    const at::Tensor copies = keys_and_values.reshape({1, -1}).expand({n, -1}).contiguous();
    const at::Tensor every = all_to_all_rows(copies, one_each, one_each, group);
    for (int j = 0; j < n; ++j) blocks[static_cast<std::size_t>(j)] = every[j].view(keys_and_values.sizes());
  } else {
    std::vector<std::int64_t> to_next(static_cast<std::size_t>(n), 0), from_previous(to_next);
    to_next[static_cast<std::size_t>((r + 1) % n)] = 1;
    from_previous[static_cast<std::size_t>((r + n - 1) % n)] = 1;
    at::Tensor block = keys_and_values;
    blocks[static_cast<std::size_t>(r)] = block;
    for (int step = 1; step < n; ++step) {
      block = all_to_all_rows(block.unsqueeze(0), from_previous, to_next, group).squeeze(0);
      blocks[static_cast<std::size_t>((r - step + n) % n)] = block;
    }
  }
  const std::int64_t c = in.layout.chunk;
  std::vector<at::Tensor> chunks(static_cast<std::size_t>(2 * n));
  for (int j = 0; j < n; ++j)
    for (int y = 0; y < 2; ++y)
      chunks[static_cast<std::size_t>(in.layout.chunk_held(j, y))] =
          blocks[static_cast<std::size_t>(j)].narrow(3, y * c, c);
  const at::Tensor whole = at::cat(chunks, 3);  // [2, b, kv_heads, seq_len, hd]
  const at::Tensor mine = load_balanced_indices(c * 2 * n, n, r).to(q.device());
  const SequenceLayout& layout = in.layout;
  const at::Tensor allowed =
      layout.document.index_select(1, mine)
          .unsqueeze(2)
          .eq(layout.document.unsqueeze(1))
          .logical_and(attention_allowed(in.scores.mask, layout.position.index_select(1, mine).unsqueeze(2),
                                         layout.position.unsqueeze(1)));
  return explicit_attention(q, whole[0], whole[1], allowed.unsqueeze(1), in.scores);
}

}  // namespace

at::Tensor context_parallel_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const DocumentLengths& documents, const AttentionScores& scores,
                                      const ContextParallel& context) {
  if (!context.group) throw ft::Error("context parallelism: no group");
  RingInputs in{layout_of(q.size(2), documents, context, q.device()), scores, context, {}};
  if (!documents.empty() && static_cast<std::int64_t>(documents.size()) != q.size(0))
    throw ft::Error("context parallelism: document lengths for " + std::to_string(documents.size()) +
                    " rows, the batch has " + std::to_string(q.size(0)));
  in.query_chunks = {in.layout.chunk_held(in.layout.rank, 0), in.layout.chunk_held(in.layout.rank, 1)};
  if (scores.softcap > 0) return explicit_ring_attention(q, k, v, in);
  return fused_ring_attention(q, k, v, std::move(in));
}

}  // namespace ft::nn
