// Names of ff::dist's collectives (include/freezeframe/detail/collective_kind.h), here so that
// the recording tools have them without linking MPI.
#include "freezeframe/detail/collective_kind.h"

namespace ff::detail {

const char* to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce:
      return "all_reduce";
    case CollectiveKind::AllGather:
      return "all_gather";
    case CollectiveKind::Broadcast:
      return "broadcast";
    case CollectiveKind::SendRecv:
      return "sendrecv";
  }
  return "invalid-collective";
}

std::string to_string(PeerSpec p) {
  if (p.mode == PeerMode::Absolute)
    return p.value == kNoPeer ? "none" : std::to_string(p.value);
  std::string s = "rank" + std::string(p.value < 0 ? "-" : "+") +
                  std::to_string(p.value < 0 ? -static_cast<long long>(p.value) : p.value);
  return p.mode == PeerMode::Cyclic ? s + " cyclic" : s;
}

}  // namespace ff::detail
