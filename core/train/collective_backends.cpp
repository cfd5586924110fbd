#include "train/collective_backends.h"

#include <ft/errors.h>

namespace fthost {

CollectiveBackends collective_backends(c10::DeviceType device) {
  CollectiveBackends backends;
  switch (device) {
    case c10::DeviceType::CPU: backends.spec = "cpu:gloo"; return backends;
    case c10::DeviceType::CUDA:
      backends.accelerator = CollectiveBackend::nccl;
      backends.spec = "cuda:nccl,cpu:gloo";
      return backends;
    default: throw ft::Error(std::string("no collective backend for device type ") + c10::DeviceTypeName(device));
  }
}

}  // namespace fthost
