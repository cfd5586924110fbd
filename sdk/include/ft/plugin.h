// The plugin contract: one exported entry point per library.
//
//   static void register_components(ft::Registry& reg) { reg.add<ft::Optimizer>(...); }
//   FT_PLUGIN("acme_optim", "1.0.0", register_components)
//
// FT_PLUGIN exports `fthost_plugin_v1` (a Boost.DLL alias) returning a PluginInfo. The host
// reads the ABI version and build fingerprint before it calls any other plugin code, and
// refuses a library built against another LibTorch, C++ ABI, CUDA setting or compiler.
#pragma once

#include <ft/registry.h>

#include <torch/version.h>
#include <boost/dll/alias.hpp>

#include <cstdint>

// Major 5: Model gains tensor parallelism, key/value caches and its FLOPs per position;
// ModelOutput, Parallelism::Args, Collate::Args, Sample and TokenizedMessages gain fields;
// Loss and Tokenizer gain virtuals (vocabulary-parallel losses, stop tokens); a new component
// kind (tensor_parallel_plan). A 4.x plugin's vtables and structs no longer match.
// Major 7: Model::Args and Checkpointer::Args gain the registry; the registry holds model
// families (Registry::add_family); ft::nn's blocks are composed by the family's builder.
// Major 8: mixture-of-experts blocks; NamedTensor's checkpoint layouts; ModelOutput's router fields.
// Major 9: expert parallelism (Collectives::all_to_all, the model role ExpertParallelism,
// Parallelism::handles_expert_parallel); packed documents (ModelInput/Batch::document_lengths).
// Major 10: context parallelism (the model role ContextParallelism, ft::nn attention's
// context_parallel member, Parallelism::Args::context_parallel_size).
// Major 11: schema keys carry a PathRole (ft/schema.h), for the pre-flight check.
// Major 12: images (ft::Sample and ft::Batch carry them, Tokenizer::image_transform, the model
// role ModelImageInput), ShardingUnit::optional, TransformerDecoder::fuse_embeddings.
// Minor 12.1: the model role ModelLayerOutline (a new interface and id: 12.0 plugins load).
#define FT_ABI_MAJOR 12
#define FT_ABI_MINOR 1
#define FT_PLUGIN_ENTRY_SYMBOL "fthost_plugin_v1"

#ifndef FT_WITH_CUDA
#define FT_WITH_CUDA 0
#endif

#if defined(__clang__)
#define FT_COMPILER_ID "clang " FT_STRINGIFY(__clang_major__)
#elif defined(__GNUC__)
#define FT_COMPILER_ID "gcc " FT_STRINGIFY(__GNUC__)
#else
#define FT_COMPILER_ID "unknown"
#endif
#define FT_STRINGIFY_(x) #x
#define FT_STRINGIFY(x) FT_STRINGIFY_(x)

namespace ft {

// What must match between host and plugin for C++ objects (tensors, modules) to cross safely.
struct BuildFingerprint {
  const char* torch_version;
  int cxx11_abi;  // _GLIBCXX_USE_CXX11_ABI
  int cuda;       // built with CUDA
  const char* compiler;
};

constexpr BuildFingerprint this_build_fingerprint() {
  return BuildFingerprint{TORCH_VERSION, _GLIBCXX_USE_CXX11_ABI, FT_WITH_CUDA, FT_COMPILER_ID};
}

// Layout rule: abi_major and abi_minor stay first in every future version, so any host can
// read them from any plugin before trusting the rest.
struct PluginInfo {
  std::uint32_t abi_major;
  std::uint32_t abi_minor;
  const char* name;
  const char* version;
  BuildFingerprint fingerprint;
  void (*register_components)(Registry&);
};

using PluginEntry = const PluginInfo*();

}  // namespace ft

#define FT_PLUGIN(NAME, VERSION, REGISTER_FN)                                                                     \
  namespace ft_plugin_entry {                                                                                     \
  const ::ft::PluginInfo* plugin_info() {                                                                         \
    static const ::ft::PluginInfo info{FT_ABI_MAJOR, FT_ABI_MINOR, NAME, VERSION, ::ft::this_build_fingerprint(), \
                                       &REGISTER_FN};                                                             \
    return &info;                                                                                                 \
  }                                                                                                               \
  }                                                                                                               \
  BOOST_DLL_ALIAS(ft_plugin_entry::plugin_info, fthost_plugin_v1)
