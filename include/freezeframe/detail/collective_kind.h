// Which collective of ff::dist an operation is: shared by the public header, the tracer's entry
// point and dist/ (which runs them).
#pragma once

#include <cstdint>
#include <string>

namespace ff::detail {

/// Persisted in recordings: never renumber, only append.
enum class CollectiveKind : uint8_t { AllReduce = 0, AllGather = 1, Broadcast = 2, SendRecv = 3 };

/// "all_reduce", "all_gather", "broadcast", "sendrecv"; "invalid-collective" for other values.
const char* to_string(CollectiveKind k);

/// Whether a collective's result size comes from the other ranks (every kind but all_reduce,
/// whose result has its input's size). A recording or replay that holds one ends with one more
/// agreement of every rank: the recording and replaying sides decide it from this alike.
constexpr bool exchanges_sizes(CollectiveKind k) {
  return k != CollectiveKind::AllReduce;
}

/// "No peer": a sendrecv with it as dest sends nothing, as source receives nothing.
inline constexpr int kNoPeer = -1;

/// How a sendrecv names a peer. Persisted in recordings (format 1.7): never renumber.
enum class PeerMode : uint8_t {
  Absolute = 0,  // a rank, or kNoPeer
  Relative = 1,  // the calling rank + offset; none before the first rank or past the last
  Cyclic = 2,    // (the calling rank + offset) modulo the rank count
};

/// A sendrecv peer as the program gave it: `value` is a rank (Absolute) or an offset.
struct PeerSpec {
  int value = kNoPeer;
  PeerMode mode = PeerMode::Absolute;
};

/// Offsets of relative peers stay below this in magnitude (a recording packs them in 21 bits).
inline constexpr int kMaxPeerOffset = (1 << 20) - 1;

/// The rank `p` names when `rank` of `ranks` calls (kNoPeer: none). An absolute rank is
/// returned as it is (the caller checks its range).
constexpr int resolve_peer(PeerSpec p, int rank, int ranks) {
  if (p.mode == PeerMode::Absolute)
    return p.value;
  long long r = static_cast<long long>(rank) + p.value;
  if (p.mode == PeerMode::Cyclic)
    return static_cast<int>(((r % ranks) + ranks) % ranks);
  return r >= 0 && r < ranks ? static_cast<int>(r) : kNoPeer;
}

/// "3", "none", "rank+1", "rank-1 cyclic": a peer for messages and recorder-dump.
std::string to_string(PeerSpec p);

}  // namespace ff::detail
