#include "vision_cross_attention_mask.h"

#include <ft/errors.h>

#include <ATen/ops/zeros.h>

namespace ft_images {

std::vector<TokenInterval> image_attention_intervals(const std::vector<std::int64_t>& tokens,
                                                     std::int64_t image_token_id) {
  const auto end = static_cast<std::int64_t>(tokens.size());
  std::vector<TokenInterval> intervals;
  for (std::int64_t i = 0; i < end; ++i) {
    if (tokens[static_cast<std::size_t>(i)] != image_token_id) continue;
    if (!intervals.empty()) intervals.back().end = i;
    intervals.push_back({i, end});
  }
  // An image token followed at once by another sees what the later one sees: walking back, an
  // interval of one token takes the end of the interval after it.
  std::int64_t later_end = end;
  for (auto it = intervals.rbegin(); it != intervals.rend(); ++it) {
    if (it->begin == it->end - 1) it->end = later_end;
    later_end = it->end;
  }
  return intervals;
}

std::vector<at::Tensor> vision_cross_attention_masks(const std::vector<std::int64_t>& tokens,
                                                     std::int64_t image_token_id,
                                                     const std::vector<std::int64_t>& tiles_per_image,
                                                     std::int64_t patches_per_tile, const std::string& sample) {
  const auto intervals = image_attention_intervals(tokens, image_token_id);
  if (intervals.size() != tiles_per_image.size())
    throw ft::Error(sample + ": " + std::to_string(intervals.size()) + " image token(s) (id " +
                    std::to_string(image_token_id) + ") in the text but " + std::to_string(tiles_per_image.size()) +
                    " image(s): each image needs its token where the text refers to it");
  const auto text_length = static_cast<std::int64_t>(tokens.size());
  std::vector<at::Tensor> masks;
  masks.reserve(intervals.size());
  for (std::size_t i = 0; i < intervals.size(); ++i) {
    const std::int64_t image_length = tiles_per_image[i] * (patches_per_tile + 1);
    at::Tensor mask = at::zeros({text_length, image_length}, at::TensorOptions().dtype(at::kBool));
    mask.slice(0, intervals[i].begin, intervals[i].end).fill_(true);
    masks.push_back(mask);
  }
  return masks;
}

}  // namespace ft_images
