#include <ft/errors.h>

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "bpe_loaders.h"
#include "sentencepiece_shim.h"
#include "text_codec.h"

namespace ft_tok {

namespace {

// The shim sits in the library directory, two levels above this plugin (lib/fthost/plugins/).
struct Shim {
  decltype(&ftspm_load) load;
  decltype(&ftspm_free) free_handle;
  decltype(&ftspm_encode) encode;
  decltype(&ftspm_decode) decode;
  decltype(&ftspm_piece_size) piece_size;
  decltype(&ftspm_piece_id) piece_id;

  static const Shim& get() {
    static const Shim shim = open();
    return shim;
  }

 private:
  static Shim open() {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&Shim::open), &info) || !info.dli_fname)
      throw ft::Error("cannot locate the ft_tokenizers plugin to find libft_sentencepiece_shim.so");
    const auto path =
        std::filesystem::path(info.dli_fname).parent_path().parent_path().parent_path() / "libft_sentencepiece_shim.so";
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!lib) throw ft::Error("cannot load " + path.string() + " (SentencePiece support): " + dlerror());
    auto sym = [&](const char* name) {
      void* p = dlsym(lib, name);
      if (!p) throw ft::Error(path.string() + ": missing symbol " + name);
      return p;
    };
    Shim s;
    s.load = reinterpret_cast<decltype(&ftspm_load)>(sym("ftspm_load"));
    s.free_handle = reinterpret_cast<decltype(&ftspm_free)>(sym("ftspm_free"));
    s.encode = reinterpret_cast<decltype(&ftspm_encode)>(sym("ftspm_encode"));
    s.decode = reinterpret_cast<decltype(&ftspm_decode)>(sym("ftspm_decode"));
    s.piece_size = reinterpret_cast<decltype(&ftspm_piece_size)>(sym("ftspm_piece_size"));
    s.piece_id = reinterpret_cast<decltype(&ftspm_piece_id)>(sym("ftspm_piece_id"));
    return s;
  }
};

class SentencePieceCodec final : public TextCodec {
 public:
  explicit SentencePieceCodec(const std::string& path) : shim_(Shim::get()) {
    char error[512] = {};
    handle_ = shim_.load(path.c_str(), error, sizeof error);
    if (!handle_) throw ft::Error(path + ": cannot load SentencePiece model: " + error);
    pieces_ = shim_.piece_size(handle_);
  }
  ~SentencePieceCodec() override { shim_.free_handle(handle_); }
  std::vector<std::int64_t> encode(std::string_view text) const override {
    char error[512] = {};
    int* ids = nullptr;
    std::size_t n = 0;
    if (shim_.encode(handle_, text.data(), text.size(), &ids, &n, error, sizeof error) != 0)
      throw ft::Error(std::string("SentencePiece encode failed: ") + error);
    std::vector<std::int64_t> out(ids, ids + n);
    std::free(ids);
    return out;
  }
  std::string decode(const std::vector<std::int64_t>& ids) const override {
    for (auto id : ids)
      if (id < 0 || id >= pieces_)
        throw ft::Error("cannot decode token id " + std::to_string(id) + ": the SentencePiece model has " +
                        std::to_string(pieces_) + " pieces");
    std::vector<int> narrow(ids.begin(), ids.end());
    char error[512] = {};
    char* text = nullptr;
    std::size_t n = 0;
    if (shim_.decode(handle_, narrow.data(), narrow.size(), &text, &n, error, sizeof error) != 0)
      throw ft::Error(std::string("SentencePiece decode failed: ") + error);
    std::string out(text, n);
    std::free(text);
    return out;
  }
  std::int64_t vocab_size() const override { return pieces_; }
  std::optional<std::int64_t> token_id(std::string_view text) const override {
    const int id = shim_.piece_id(handle_, text.data(), text.size());
    if (id < 0) return std::nullopt;
    return id;
  }

 private:
  const Shim& shim_;
  void* handle_ = nullptr;
  int pieces_ = 0;
};

}  // namespace

std::unique_ptr<TextCodec> load_sentencepiece(const std::string& path) {
  if (!std::ifstream(path)) read_text_file(path, "SentencePiece model");  // throws with the path and errno
  return std::make_unique<SentencePieceCodec>(path);
}

std::shared_ptr<const TextCodec> load_sentencepiece_or_tokenizer_json(const std::string& path) {
  if (looks_like_json(path)) return std::make_shared<BpeCodec>(load_hf_tokenizer_json(path));
  return load_sentencepiece(path);
}

bool looks_like_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char c = 0;
  while (in.get(c))
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c == '{';
  return false;
}

}  // namespace ft_tok
