// C interface of libft_sentencepiece_shim.so, which wraps libsentencepiece. Debian's
// libsentencepiece carries its own protobuf (3.14) whose symbols LibTorch's protobuf (3.21)
// would interpose, failing its version check at load; the shim is dlopen'ed with RTLD_DEEPBIND
// so libsentencepiece binds to its own copy.
#pragma once

#include <cstddef>

extern "C" {
// Returns a handle, or null with a message in `error`.
void* ftspm_load(const char* path, char* error, std::size_t error_size);
void ftspm_free(void* handle);
// Ids of `text` into a malloc'ed array (*ids, *count); 0 on success, else a message in `error`.
int ftspm_encode(void* handle, const char* text, std::size_t size, int** ids, std::size_t* count, char* error,
                 std::size_t error_size);
// Text of `ids` into a malloc'ed buffer (*text, *size).
int ftspm_decode(void* handle, const int* ids, std::size_t count, char** text, std::size_t* size, char* error,
                 std::size_t error_size);
int ftspm_piece_size(void* handle);
// Id of a piece, or -1 when the model lacks it.
int ftspm_piece_id(void* handle, const char* piece, std::size_t size);
}
