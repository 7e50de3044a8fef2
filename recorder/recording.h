// The Recording: plain data (indices, no pointers) describing a stretch of backend work, so
// it can be replayed with new buffers, saved, loaded, dumped and diffed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "backend/backend.h"
#include "backend/ir/kernel_ir.h"
#include "backend/ir/size_expr.h"
#include "backend/region_names.h"

namespace ff::rec {

inline constexpr uint32_t kNone = 0xFFFFFFFFu;
using detail::CollectiveKind;
using detail::PeerMode;

/// Where a slot (one buffer lifetime) comes from. Persisted: never renumber.
enum class SlotOrigin : uint8_t {
  Input = 0,     // bound to input `origin_index` at replay
  Alloc = 1,     // created by op `origin_index` (an Alloc)
  External = 2,  // session capture only: memory that existed before the capture saw it
};
const char* to_string(SlotOrigin o);

struct Slot {
  ScalarType type = ScalarType::Float32;
  SlotOrigin origin = SlotOrigin::Alloc;
  uint32_t origin_index = kNone;
  uint64_t recorded_size = 0;  // logical element count while recording (final value)
  uint32_t size_expr = kNone;  // Alloc: expression of the allocated count
};

/// Nodes of size expressions, stored in one table; an expression is the index of its root.
/// BufferSize reads the logical size of a slot at the time the expression is evaluated
/// (an input's size, an allocation's count, or a compress result's count).
struct ExprNode {
  SizeOp op = SizeOp::Const;
  uint64_t value = 0;     // Const
  uint32_t slot = kNone;  // BufferSize
  uint32_t lhs = kNone, rhs = kNone;
};

/// Operation codes. Persisted: never renumber, only append.
enum class OpCode : uint8_t {
  Alloc = 0,      // slot, size (count); src (since format 1.2): a live slot whose buffer this
                  // slot takes over (that slot ends here; a fresh buffer if it is too small)
  Release = 1,    // slot
  Copy = 2,       // dst slot+offset, src slot+offset (or constant), size (bytes), sub = CopyKind
  Fill = 3,       // slot, size (count), elem_size, value
  Launch = 4,     // kernel, size, args [arg_begin, arg_end)
  Reduce = 5,     // src slot, dst slot, size (count), sub = ReduceOp, type
  PrefixSum = 6,  // src slot, dst slot, size (count), type, flag = exclusive
  Compress = 7,   // src (mask) slot, dst slot, size (count of mask)
  Sync = 8,
  Collective = 9,  // since format 1.6: an ff::dist collective. sub = CollectiveKind, flag =
                   // ReduceOp (AllReduce), type; src slot+offset, size (count of this rank's
                   // part); dst: a whole slot whose size the op sets (a buffer too small for the
                   // result is replaced first); value = CollectivePeers; elem_size = the number
                   // of ranks it was recorded with (a replay needs as many)
};
inline constexpr int kNumOpCodes = 10;
const char* to_string(OpCode c);

/// A Collective's peers and the rank that recorded it, packed into Op::value: 21 bits each
/// (ranks below 2^21 - 1). An absolute rank is stored plus one, so that "none" (-1) is 0; a
/// relative peer's offset (since format 1.7) plus 2^20. A SendRecv's Op::flag holds the peers'
/// modes (PeerMode: the destination's in bits 0-1, the source's in bits 2-3); a sendrecv with
/// an absolute peer replays only on the rank that recorded it, one with relative peers on
/// every rank.
struct CollectivePeers {
  int peer = -1;    // Broadcast: the root; SendRecv: the destination (a rank or an offset)
  int source = -1;  // SendRecv
  int rank = -1;    // the rank that recorded the op
  PeerMode peer_mode = PeerMode::Absolute, source_mode = PeerMode::Absolute;

  static constexpr int kMaxRank = (1 << 21) - 2;
  uint64_t pack() const;
  /// The modes, as a SendRecv's Op::flag.
  uint8_t modes() const;
  /// `modes`: a SendRecv's Op::flag (0 for the other kinds; collective_peers(op) picks).
  static CollectivePeers unpack(uint64_t v, uint8_t modes = 0);
  /// Whether `modes` (a SendRecv's flag) names two known modes.
  static bool valid_modes(uint8_t modes);

  detail::PeerSpec dest() const { return {peer, peer_mode}; }

  detail::PeerSpec from() const { return {source, source_mode}; }
};

/// One operation; which fields matter depends on `code` (see OpCode).
struct Op {
  OpCode code = OpCode::Sync;
  uint8_t sub = 0;  // CopyKind or ReduceOp
  ScalarType type = ScalarType::Float32;
  uint8_t flag = 0;                           // PrefixSum: exclusive
  uint32_t dst = kNone, src = kNone;          // slots
  uint64_t dst_offset = 0, src_offset = 0;    // bytes into the slots
  uint32_t size_expr = kNone;                 // count or bytes, see OpCode
  uint32_t kernel = kNone;                    // Launch: index into kernels
  uint32_t arg_begin = 0, arg_end = 0;        // Launch: range in args
  uint32_t constant = kNone;                  // Copy from host: index into constants
  uint64_t value = 0;                         // Fill: the pattern
  uint32_t elem_size = 0;                     // Fill: bytes per element (1, 2, 4 or 8)
  uint32_t access_begin = 0, access_end = 0;  // range in accesses
};

/// The peers of a Collective op, with a SendRecv's modes from its flag (an all_reduce's flag
/// is its reduction).
CollectivePeers collective_peers(const Op& op);

/// A kernel argument of a Launch.
struct LaunchArg {
  bool is_buffer = false;
  uint32_t slot = kNone;       // buffer
  uint64_t offset = 0;         // buffer: bytes into the slot
  uint32_t size_expr = kNone;  // scalar with provenance (else `bits` is a constant)
  uint64_t bits = 0;           // scalar value while recording
};

/// Which slots an op reads and writes (for validation, dump and liveness).
struct Access {
  uint32_t slot = kNone;
  bool write = false;
};

/// A size decision taken while recording, checked at replay after op `after_op` (kNone:
/// before the first op).
struct Guard {
  SizeCmp cmp = SizeCmp::Eq;
  uint32_t lhs = kNone, rhs = kNone;  // expressions
  bool outcome = false;
  uint32_t after_op = kNone;
  uint64_t lhs_value = 0, rhs_value = 0;
  std::string what;
};

/// A slot an op reads and/or writes, as the op's own fields name it (what a replay touches).
struct SlotUse {
  uint32_t slot;
  bool read, write;
};

/// What one optimiser pass did (recorder/optimize.h): counts before and after it.
struct PassStats {
  std::string name;
  uint32_t ops_before = 0, ops_after = 0;
  uint32_t launches_before = 0, launches_after = 0;
  uint32_t allocs_before = 0, allocs_after = 0;
  uint32_t guards_before = 0, guards_after = 0;
};

struct RecordingData;

/// The slots `op` reads and writes (Alloc and Release: none). The op's kernel and argument
/// range must be valid; the slots are not checked.
void op_uses(const RecordingData& d, const Op& op, std::vector<SlotUse>& out);
/// Appends the slots a launch of `kernel` with `args` (one per parameter) reads and writes.
void launch_uses(const KernelIR& kernel, std::span<const LaunchArg> args,
                 std::vector<SlotUse>& out);

/// Records that kernel `kernel` of `d` ran with region names `names` (one per region-opening
/// marker): kept when it has none yet, else every name it does not hold yet is joined to it
/// ("a | b"), as when two equal loops with different names share one kernel.
struct RecordingData;
void add_region_names(RecordingData& d, uint32_t kernel, const RegionNames& names);

/// The table of a RecordingData an item lives in, for locating a validation problem.
enum class Table : uint8_t {
  None = 0,  // the recording as a whole
  Kernels,
  Slots,
  Exprs,
  Ops,
  Args,
  Accesses,
  Guards,
  Inputs,
  Outputs,
};

/// What validation found wrong, located at the item where it was found (the file reader maps
/// it to a section and byte offset).
struct ValidationIssue {
  Table table = Table::None;
  uint32_t index = kNone;  // the item in `table` (kNone with Table::None)
  std::string what;        // the sentence, naming the item: "op 5 (launch) names kernel 3 of 2"

  /// The ff::FormatError message: "invalid recording: " + what.
  std::string message() const { return "invalid recording: " + what; }
};

struct RecordingData {
  std::string backend;  // the stack it was recorded on
  std::vector<Slot> slots;
  std::vector<ExprNode> exprs;
  std::vector<Op> ops;
  std::vector<LaunchArg> args;
  std::vector<Access> accesses;
  std::vector<Guard> guards;
  std::vector<std::shared_ptr<const KernelIR>> kernels;  // one per distinct hash
  std::vector<std::vector<std::byte>> constants;         // host data uploaded in the scope
  std::vector<uint32_t> inputs;                          // slot per input

  struct Output {
    uint32_t slot = kNone;
  };

  std::vector<Output> outputs;
  bool is_capture = false;        // a whole-session capture (may hold host reads, externals)
  std::vector<PassStats> passes;  // the optimiser passes that ran, in order (empty: none)
  /// Since format 1.8: the names of each kernel's regions (ff::LoopOptions::name), kept beside
  /// the kernels as the tracer keeps them (region_names.h). Empty, or one entry per kernel:
  /// empty for a kernel with no named region, else one name per region-opening marker in
  /// order ("" for an unnamed one). Launches of one kernel under other names join them
  /// ("a | b"). Only recorder-dump and messages read them.
  std::vector<RegionNames> region_names;
  /// Since format 1.10: what the writer of its file called it (f.save labels a frozen call's
  /// backward); empty: nothing. Only recorder-dump and messages read it.
  std::string label;

  /// Kernel `k`'s region names, or nullptr when it has none.
  const RegionNames* region_names_of(size_t k) const {
    return k < region_names.size() && !region_names[k].empty() ? &region_names[k] : nullptr;
  }

  /// Checks every index, type, expression and slot lifetime; throws ff::FormatError naming
  /// the problem (a recording that fails is damaged, whether it came from a file or was built
  /// by hand: docs/errors.md). Kernels that are KernelIR::is_validated() are not checked
  /// again. Code that goes on to use the recording takes a ValidatedRecording instead.
  void validate() const;
  /// validate(), returning the first problem instead of throwing.
  std::optional<ValidationIssue> first_issue() const;
  std::string summary() const;
};

/// A recording known valid: shared, immutable, and made only by validating it (check()), so
/// whoever holds one never validates it again. The file reader (format::parse) and the
/// recorder (closing a scope, the optimiser) hand these out; a ReplayPlan takes one. Its
/// kernels are KernelIR::is_validated() when check() was given the data to keep, so a
/// backend does not validate them again either.
class ValidatedRecording {
 public:
  /// An empty recording (valid).
  ValidatedRecording();

  /// Validates `data` (ff::FormatError naming the problem) and keeps it; its kernels become
  /// ones known valid (copies of those that were not).
  static ValidatedRecording check(RecordingData data);
  /// Validates `data` and shares it as it is (kernels not known valid stay so: a backend
  /// validates them when it compiles them).
  static ValidatedRecording check(std::shared_ptr<const RecordingData> data);
  /// check(RecordingData), returning the first problem instead of throwing.
  static std::variant<ValidatedRecording, ValidationIssue> try_check(RecordingData data);

  const RecordingData& operator*() const { return *data_; }

  const RecordingData* operator->() const { return data_.get(); }

  const RecordingData* get() const { return data_.get(); }

  const std::shared_ptr<const RecordingData>& shared() const { return data_; }

 private:
  explicit ValidatedRecording(std::shared_ptr<const RecordingData> data) : data_(std::move(data)) {}

  std::shared_ptr<const RecordingData> data_;
};

/// How many times a recording has been validated in this process (RecordingData::validate,
/// first_issue and ValidatedRecording::check alike): a counter for the tests that check a
/// loaded recording is validated once.
uint64_t recording_validations();

}  // namespace ff::rec
