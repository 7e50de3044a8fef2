// Names of the backend enums a recording persists (declared in backend/backend.h): defined
// here, in the format's target, so the dumper has them without linking a backend
// (ReduceOp's are in common/reduce_op.cpp).
#include "backend/backend.h"

namespace ff {

const char* to_string(CopyKind k) {
  switch (k) {
    case CopyKind::HostToDevice:
      return "host_to_device";
    case CopyKind::DeviceToHost:
      return "device_to_host";
    case CopyKind::DeviceToDevice:
      return "device_to_device";
  }
  return "invalid-copy-kind";
}

}  // namespace ff
