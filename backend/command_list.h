// A batch of backend operations handed over at once (Backend::submit): what a replay issues
// between two points where the host needs a result. Plain data with concrete pointers and
// sizes, neutral (no replay-plan type), so nothing below the replayer links upward.
//
// A backend with a cheaper way to run a fixed sequence again (CUDA graphs: build once, re-bind
// pointers and sizes on later submissions) recognises a sequence it has seen by `key` and by
// the commands' structure; the default implementation runs the commands one by one.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace ff {

/// What a command does; the fields of Command it uses are listed per kind.
enum class CommandKind : uint8_t {
  Launch = 0,     // kernel, size, args [args_begin, args_begin + n_args)
  Copy = 1,       // dst, src, size (bytes), copy_kind (never HostToDevice in a list)
  Fill = 2,       // dst, size (elements), elem_size, value
  Reduce = 3,     // reduce_op, type, src, size (elements), dst
  PrefixSum = 4,  // type, exclusive, src, size, dst
  Compress = 5,   // src (mask), size, dst; only as the last command (its count ends the batch)
  Release = 6,    // dst: give the buffer back once every command before it has run
};

struct Command {
  CommandKind kind = CommandKind::Launch;
  ScalarType type = ScalarType::Float32;
  CopyKind copy_kind = CopyKind::DeviceToDevice;
  ReduceOp reduce_op = ReduceOp::Add;
  bool exclusive = false;
  uint32_t elem_size = 0;
  uint32_t args_begin = 0, n_args = 0;
  const KernelHandle* kernel = nullptr;  // borrowed: the submitter keeps the handle alive
  void* dst = nullptr;
  const void* src = nullptr;
  uint64_t size = 0;
  uint64_t value = 0;
};

struct CommandList {
  /// Names the sequence across submissions (the same replay plan and position give the same
  /// key); 0 = not worth remembering. A backend must not rely on it for correctness: equal
  /// keys with a different structure are a different sequence.
  uint64_t key = 0;
  std::vector<Command> commands;
  std::vector<KernelArg> args;

  void clear() {
    commands.clear();
    args.clear();
  }

  bool empty() const { return commands.empty(); }
};

}  // namespace ff
