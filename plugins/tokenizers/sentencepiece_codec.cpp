#include <ft/errors.h>

#include <sentencepiece_processor.h>

#include <fstream>

#include "bpe_loaders.h"
#include "text_codec.h"

namespace ft_tok {

namespace {

class SentencePieceCodec final : public TextCodec {
 public:
  explicit SentencePieceCodec(const std::string& path) {
    const auto status = processor_.Load(path);
    if (!status.ok()) throw ft::Error(path + ": cannot load SentencePiece model: " + status.ToString());
  }
  std::vector<std::int64_t> encode(std::string_view text) const override {
    std::vector<int> ids;
    const auto status = processor_.Encode(text, &ids);
    if (!status.ok()) throw ft::Error("SentencePiece encode failed: " + status.ToString());
    return {ids.begin(), ids.end()};
  }
  std::string decode(const std::vector<std::int64_t>& ids) const override {
    std::vector<int> narrow(ids.begin(), ids.end());
    for (auto id : ids)
      if (id < 0 || id >= processor_.GetPieceSize())
        throw ft::Error("cannot decode token id " + std::to_string(id) + ": the SentencePiece model has " +
                        std::to_string(processor_.GetPieceSize()) + " pieces");
    std::string text;
    const auto status = processor_.Decode(narrow, &text);
    if (!status.ok()) throw ft::Error("SentencePiece decode failed: " + status.ToString());
    return text;
  }
  std::int64_t vocab_size() const override { return processor_.GetPieceSize(); }
  std::optional<std::int64_t> token_id(std::string_view text) const override {
    const int id = processor_.PieceToId(text);
    if (id == processor_.unk_id() && text != processor_.IdToPiece(id)) return std::nullopt;
    return id;
  }
  int bos() const { return processor_.bos_id(); }

 private:
  sentencepiece::SentencePieceProcessor processor_;
};

}  // namespace

std::unique_ptr<TextCodec> load_sentencepiece(const std::string& path) {
  if (!std::ifstream(path)) read_text_file(path, "SentencePiece model");  // throws with the path and errno
  return std::make_unique<SentencePieceCodec>(path);
}

bool looks_like_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char c = 0;
  while (in.get(c))
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c == '{';
  return false;
}

}  // namespace ft_tok
