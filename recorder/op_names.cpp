// Names of the backend enums a recording persists (declared in backend/backend.h): defined
// here, in the format's target, so the dumper has them without linking a backend.
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

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Prod:
      return "prod";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::And:
      return "and";
    case ReduceOp::Or:
      return "or";
  }
  return "invalid-reduce-op";
}

}  // namespace ff
