// Which collective of ff::dist an operation is: shared by the public header, the tracer's entry
// point and dist/ (which runs them).
#pragma once

#include <cstdint>

namespace ff::detail {

/// Persisted in recordings: never renumber, only append.
enum class CollectiveKind : uint8_t { AllReduce = 0, AllGather = 1, Broadcast = 2, SendRecv = 3 };

/// "all_reduce", "all_gather", "broadcast", "sendrecv"; "invalid-collective" for other values.
const char* to_string(CollectiveKind k);

/// "No peer": a sendrecv with it as dest sends nothing, as source receives nothing.
inline constexpr int kNoPeer = -1;

}  // namespace ff::detail
