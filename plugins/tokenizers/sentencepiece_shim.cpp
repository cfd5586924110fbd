#include "sentencepiece_shim.h"

#include <sentencepiece_processor.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace {
void set_error(char* error, std::size_t size, const std::string& message) {
  if (!error || !size) return;
  std::strncpy(error, message.c_str(), size - 1);
  error[size - 1] = '\0';
}
}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* ftspm_load(const char* path, char* error, std::size_t error_size) {
  auto* p = new sentencepiece::SentencePieceProcessor;
  const auto status = p->Load(path);
  if (!status.ok()) {
    set_error(error, error_size, status.ToString());
    delete p;
    return nullptr;
  }
  return p;
}

__attribute__((visibility("default"))) void ftspm_free(void* handle) {
  delete static_cast<sentencepiece::SentencePieceProcessor*>(handle);
}

__attribute__((visibility("default"))) int ftspm_encode(void* handle, const char* text, std::size_t size, int** ids,
                                                        std::size_t* count, char* error, std::size_t error_size) {
  std::vector<int> out;
  const auto status =
      static_cast<sentencepiece::SentencePieceProcessor*>(handle)->Encode(std::string_view(text, size), &out);
  if (!status.ok()) {
    set_error(error, error_size, status.ToString());
    return 1;
  }
  *count = out.size();
  *ids = static_cast<int*>(std::malloc(std::max<std::size_t>(1, out.size()) * sizeof(int)));
  std::memcpy(*ids, out.data(), out.size() * sizeof(int));
  return 0;
}

__attribute__((visibility("default"))) int ftspm_decode(void* handle, const int* ids, std::size_t count, char** text,
                                                        std::size_t* size, char* error, std::size_t error_size) {
  std::string out;
  const auto status =
      static_cast<sentencepiece::SentencePieceProcessor*>(handle)->Decode(std::vector<int>(ids, ids + count), &out);
  if (!status.ok()) {
    set_error(error, error_size, status.ToString());
    return 1;
  }
  *size = out.size();
  *text = static_cast<char*>(std::malloc(std::max<std::size_t>(1, out.size())));
  std::memcpy(*text, out.data(), out.size());
  return 0;
}

__attribute__((visibility("default"))) int ftspm_piece_size(void* handle) {
  return static_cast<sentencepiece::SentencePieceProcessor*>(handle)->GetPieceSize();
}

__attribute__((visibility("default"))) int ftspm_piece_id(void* handle, const char* piece, std::size_t size) {
  auto* p = static_cast<sentencepiece::SentencePieceProcessor*>(handle);
  const std::string_view text(piece, size);
  const int id = p->PieceToId(text);
  if (id == p->unk_id() && p->IdToPiece(id) != text) return -1;
  return id;
}

}  // extern "C"
