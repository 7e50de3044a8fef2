// Recording validation and summaries. Validation guards the replayer (and the file reader)
// against any index, type or expression that could make it touch memory it should not.
#include "recorder/recording.h"

#include <atomic>
#include <string>

#include "backend/ir/ir_analysis.h"
#include "freezeframe/errors.h"
#include "recorder/size_eval.h"

namespace ff::rec {

const char* to_string(SlotOrigin o) {
  switch (o) {
    case SlotOrigin::Input:
      return "input";
    case SlotOrigin::Alloc:
      return "alloc";
    case SlotOrigin::External:
      return "external";
  }
  return "invalid-origin";
}

const char* to_string(OpCode c) {
  static const char* const names[kNumOpCodes] = {"alloc",  "release",   "copy",       "fill",
                                                 "launch", "reduce",    "prefix_sum", "compress",
                                                 "sync",   "collective"};
  auto i = static_cast<unsigned>(c);
  return i < kNumOpCodes ? names[i] : "invalid-op";
}

namespace {
constexpr int kOffsetBias = 1 << 20;
}

uint64_t CollectivePeers::pack() const {
  auto field = [](int r, PeerMode m) {
    int stored = m == PeerMode::Absolute ? r + 1 : r + kOffsetBias;
    return static_cast<uint64_t>(stored) & 0x1FFFFF;
  };
  return field(peer, peer_mode) | field(source, source_mode) << 21 |
         field(rank, PeerMode::Absolute) << 42;
}

uint8_t CollectivePeers::modes() const {
  return static_cast<uint8_t>(static_cast<unsigned>(peer_mode) | static_cast<unsigned>(source_mode)
                                                                     << 2);
}

CollectivePeers CollectivePeers::unpack(uint64_t v, uint8_t modes) {
  auto mode = [&](int shift) { return static_cast<PeerMode>((modes >> shift) & 3); };
  auto field = [&](int shift, PeerMode m) {
    int stored = static_cast<int>((v >> shift) & 0x1FFFFF);
    return m == PeerMode::Absolute ? stored - 1 : stored - kOffsetBias;
  };
  CollectivePeers p;
  p.peer_mode = mode(0);
  p.source_mode = mode(2);
  p.peer = field(0, p.peer_mode);
  p.source = field(21, p.source_mode);
  p.rank = field(42, PeerMode::Absolute);
  return p;
}

CollectivePeers collective_peers(const Op& op) {
  bool sendrecv = static_cast<CollectiveKind>(op.sub) == CollectiveKind::SendRecv;
  return CollectivePeers::unpack(op.value, sendrecv ? op.flag : 0);
}

bool CollectivePeers::valid_modes(uint8_t modes) {
  auto ok = [](unsigned m) { return m <= static_cast<unsigned>(PeerMode::Cyclic); };
  return modes < 16 && ok(modes & 3u) && ok(modes >> 2);
}

void launch_uses(const KernelIR& kernel, std::span<const LaunchArg> args,
                 std::vector<SlotUse>& out) {
  for (size_t p = 0; p < args.size(); ++p) {
    if (!args[p].is_buffer)
      continue;
    ParamKind k = kernel.params[p].kind;
    out.push_back({args[p].slot, k != ParamKind::BufferOut, k != ParamKind::BufferIn});
  }
}

void op_uses(const RecordingData& d, const Op& op, std::vector<SlotUse>& out) {
  out.clear();
  auto kind = static_cast<CopyKind>(op.sub);
  switch (op.code) {
    case OpCode::Copy:  // host memory is no slot: a constant's source, a host read's target
      if (kind != CopyKind::HostToDevice)
        out.push_back({op.src, true, false});
      if (kind != CopyKind::DeviceToHost)
        out.push_back({op.dst, false, true});
      break;
    case OpCode::Fill:
      out.push_back({op.dst, false, true});
      break;
    case OpCode::Launch:
      launch_uses(
          *d.kernels[op.kernel],
          std::span<const LaunchArg>(d.args).subspan(op.arg_begin, op.arg_end - op.arg_begin), out);
      break;
    case OpCode::Reduce:
    case OpCode::PrefixSum:
    case OpCode::Compress:
    case OpCode::Collective:
      out.push_back({op.src, true, false});
      out.push_back({op.dst, false, true});
      break;
    default:  // Alloc and Release create and end a slot rather than use it
      break;
  }
}

// Validation, one rule family per member, in dependency order: size expressions, kernels,
// slots, the flat tables (inputs, outputs, launch arguments, accesses), guards, each op's own
// fields, and finally the walk over the ops that checks slot lifetimes (nothing used outside
// its lifetime, nothing read before it is written, access lists agree with the ops, outputs
// written). Later families rely on the earlier ones (an op's kernel is checked before its
// arguments are matched to the kernel's parameters). Every rule fails with a ValidationIssue
// located at the item it names first (its table and index), which validate() throws as
// ff::FormatError and the file reader maps to a section and byte offset.
namespace {

std::atomic<uint64_t> g_recording_validations{0};

/// An item of the recording as the messages name it ("op 5 (launch)"), and where it lives.
struct Item {
  Table table;
  size_t index;
  std::string name;
};

Item op_item(size_t i, const Op& op) {
  return {Table::Ops, i, "op " + std::to_string(i) + " (" + to_string(op.code) + ")"};
}

}  // namespace

void add_region_names(RecordingData& d, uint32_t kernel, const RegionNames& names) {
  if (d.region_names.size() <= kernel)
    d.region_names.resize(kernel + 1);
  RegionNames& have = d.region_names[kernel];
  if (have.empty()) {
    have = names;
    return;
  }
  for (size_t i = 0; i < have.size() && i < names.size(); ++i) {
    if (names[i].empty() || have[i] == names[i] ||
        (" | " + have[i] + " | ").find(" | " + names[i] + " | ") != std::string::npos)
      continue;
    have[i] = have[i].empty() ? names[i] : have[i] + " | " + names[i];
  }
}

namespace {

Item item(Table table, const char* kind, size_t i) {
  return {table, i, std::string(kind) + " " + std::to_string(i)};
}

class RecordingValidator {
 public:
  /// `vouched`, when not null, receives the recording's kernels as ones known valid
  /// (KernelIR::is_validated(): the same kernel, or a validated copy).
  RecordingValidator(const RecordingData& d, std::vector<std::shared_ptr<const KernelIR>>* vouched)
      : d_(d), vouched_(vouched) {}

  /// The first problem, or nothing.
  std::optional<ValidationIssue> run() {
    g_recording_validations.fetch_add(1, std::memory_order_relaxed);
    try {
      check_exprs();
      check_kernels();
      check_slots();
      check_tables();
      check_guards();
      for (size_t i = 0; i < d_.ops.size(); ++i)
        check_op(i);
      check_lifetimes();
    } catch (Failure& f) {
      return std::move(f.issue);
    }
    return std::nullopt;
  }

 private:
  struct Failure {
    ValidationIssue issue;
  };

  /// Fails at item `at`: the message is its name followed by `rest`.
  [[noreturn]] static void fail(const Item& at, const std::string& rest) {
    throw Failure{{at.table, static_cast<uint32_t>(at.index), at.name + rest}};
  }

  void check_slot(uint32_t s, const Item& at) const {
    if (s >= d_.slots.size())
      fail(at, " names slot " + std::to_string(s) + " of " + std::to_string(d_.slots.size()));
  }

  void check_expr(uint32_t e, const Item& at) const {
    if (e >= d_.exprs.size())
      fail(at, " names size expression " + std::to_string(e) + " of " +
                   std::to_string(d_.exprs.size()));
  }

  // --- size expressions: operators, slot leaves, operands before their node, bounded size --
  void check_exprs() const {
    // Nodes an evaluation visits per expression (operands may be shared, so a chain of n nodes
    // can unfold to 2^n): bounded, so evaluating a damaged recording cannot hang.
    constexpr uint64_t kMaxExprTree = 1u << 16;
    std::vector<uint64_t> tree(d_.exprs.size(), 1);
    for (size_t i = 0; i < d_.exprs.size(); ++i) {
      const ExprNode& n = d_.exprs[i];
      Item where = item(Table::Exprs, "size expression", i);
      switch (n.op) {
        case SizeOp::Const:
        case SizeOp::Rank:
        case SizeOp::Ranks:
          break;
        case SizeOp::BufferSize:
          check_slot(n.slot, where);
          break;
        case SizeOp::Add:
        case SizeOp::Sub:
        case SizeOp::Mul:
        case SizeOp::Div:
        case SizeOp::Min:
        case SizeOp::Max:
          // Operands precede their node: expressions are acyclic and evaluation terminates.
          if (n.lhs >= i || n.rhs >= i)
            fail(where, " has an operand that does not precede it");
          tree[i] = 1 + tree[n.lhs] + tree[n.rhs];
          if (tree[i] > kMaxExprTree)
            fail(where, " unfolds to more than " + std::to_string(kMaxExprTree) + " nodes");
          break;
        default:
          fail(where, " has an invalid operator");
      }
    }
  }

  // --- kernels: present, valid IR, the hash of its contents (what the replay plan hands the
  // backend). A kernel known valid (loaded, or compiled by a backend) is not checked again.
  void check_kernels() const {
    for (size_t k = 0; k < d_.kernels.size(); ++k) {
      const std::shared_ptr<const KernelIR>& kernel = d_.kernels[k];
      Item where = item(Table::Kernels, "kernel", k);
      if (!kernel)
        fail(where, " is missing");
      std::shared_ptr<const KernelIR> known = kernel;
      if (!kernel->is_validated()) {
        try {
          known = KernelIR::validated(*kernel);  // a copy, its hash computed from its contents
        } catch (const FormatError& e) {
          fail(where, std::string(": ") + e.what());
        }
        if (known->hash != kernel->hash)
          fail(where, " is stored with hash " + kernel->hash.to_hex() + " but its IR hashes to " +
                          known->hash.to_hex());
      }
      if (vouched_)
        vouched_->push_back(std::move(known));
    }
    if (d_.region_names.size() > d_.kernels.size())
      fail(Item{Table::None, kNone, "the recording"},
           " has region names for " + std::to_string(d_.region_names.size()) + " kernels, but " +
               std::to_string(d_.kernels.size()) + " kernels");
    for (size_t k = 0; k < d_.region_names.size(); ++k) {
      size_t names = d_.region_names[k].size();
      if (names != 0 && names != count_regions(*d_.kernels[k]))
        fail(item(Table::Kernels, "kernel", k),
             " has " + std::to_string(count_regions(*d_.kernels[k])) + " region(s) but " +
                 std::to_string(names) + " region names");
    }
  }

  // --- slots: type, size expression, origin (and that the origin names this slot back) -----
  void check_slots() const {
    for (size_t s = 0; s < d_.slots.size(); ++s) {
      const Slot& sl = d_.slots[s];
      Item where = item(Table::Slots, "slot", s);
      if (!is_valid(sl.type))
        fail(where, " has an invalid element type");
      if (sl.size_expr != kNone)
        check_expr(sl.size_expr, where);
      switch (sl.origin) {
        case SlotOrigin::Input:
          if (sl.origin_index >= d_.inputs.size())
            fail(where, " is bound to input " + std::to_string(sl.origin_index) + " of " +
                            std::to_string(d_.inputs.size()));
          if (d_.inputs[sl.origin_index] != s)
            fail(where, " names input " + std::to_string(sl.origin_index) +
                            ", which is bound to another slot");
          break;
        case SlotOrigin::Alloc:
          if (sl.origin_index >= d_.ops.size() || d_.ops[sl.origin_index].code != OpCode::Alloc ||
              d_.ops[sl.origin_index].dst != s)
            fail(where, " claims an allocating op that does not allocate it");
          break;
        case SlotOrigin::External:
          if (!d_.is_capture)
            fail(where, " is external, which only session captures may hold");
          break;
        default:
          fail(where, " has an invalid origin");
      }
    }
  }

  // --- the flat tables: inputs, outputs, launch arguments, accesses ------------------------
  void check_tables() const {
    for (size_t k = 0; k < d_.inputs.size(); ++k) {
      Item where = item(Table::Inputs, "input", k);
      check_slot(d_.inputs[k], where);
      if (d_.slots[d_.inputs[k]].origin != SlotOrigin::Input)
        fail(where, " is bound to a slot that is not an input");
    }
    for (size_t k = 0; k < d_.outputs.size(); ++k)
      check_slot(d_.outputs[k].slot, item(Table::Outputs, "output", k));
    for (size_t i = 0; i < d_.args.size(); ++i) {
      if (d_.args[i].is_buffer)
        check_slot(d_.args[i].slot, item(Table::Args, "launch argument", i));
      if (d_.args[i].size_expr != kNone)
        check_expr(d_.args[i].size_expr, item(Table::Args, "launch argument", i));
    }
    for (size_t i = 0; i < d_.accesses.size(); ++i)
      check_slot(d_.accesses[i].slot, item(Table::Accesses, "access", i));
  }

  // --- guards: comparison, expressions, position -------------------------------------------
  void check_guards() const {
    for (size_t g = 0; g < d_.guards.size(); ++g) {
      const Guard& gd = d_.guards[g];
      Item where = item(Table::Guards, "guard", g);
      if (static_cast<uint8_t>(gd.cmp) > static_cast<uint8_t>(SizeCmp::Ge))
        fail(where, " has an invalid comparison");
      check_expr(gd.lhs, where);
      check_expr(gd.rhs, where);
      if (gd.after_op != kNone && gd.after_op >= d_.ops.size())
        fail(where, " is placed after op " + std::to_string(gd.after_op) + " of " +
                        std::to_string(d_.ops.size()));
    }
  }

  // --- one op's own fields -----------------------------------------------------------------
  void check_op(size_t i) const {
    const Op& op = d_.ops[i];
    Item where = op_item(i, op);
    if (static_cast<unsigned>(op.code) >= kNumOpCodes)
      fail(where, " has an invalid op code");
    if (op.access_begin > op.access_end || op.access_end > d_.accesses.size())
      fail(where, " has an invalid access range");
    if (op.size_expr != kNone)  // ops without a size may still carry one: it must be valid
      check_expr(op.size_expr, where);
    bool sized = op.code != OpCode::Release && op.code != OpCode::Sync;
    if (sized && op.size_expr == kNone)
      fail(where, " has no size expression");
    switch (op.code) {
      case OpCode::Alloc:
        check_slot(op.dst, where);
        if (d_.slots[op.dst].origin != SlotOrigin::Alloc || d_.slots[op.dst].origin_index != i)
          fail(where, " allocates slot " + std::to_string(op.dst) + " which names another origin");
        if (op.type !=
            d_.slots[op.dst].type)  // the replay allocates op.type, outputs read slot types
          fail(where, " allocates " + std::string(to_string(op.type)) + " elements for a slot of " +
                          to_string(d_.slots[op.dst].type));
        if (op.src != kNone) {  // takes over another allocation's buffer
          check_slot(op.src, where);
          if (op.src == op.dst || d_.slots[op.src].origin != SlotOrigin::Alloc)
            fail(where, " takes over the buffer of slot " + std::to_string(op.src) +
                            ", which is not another allocation");
        }
        break;
      case OpCode::Release:
        check_slot(op.dst, where);
        break;
      case OpCode::Copy:
        if (op.sub > static_cast<uint8_t>(CopyKind::DeviceToDevice))
          fail(where, " has an invalid copy kind");
        if (static_cast<CopyKind>(op.sub) == CopyKind::HostToDevice &&
            op.constant >= d_.constants.size())
          fail(where, " names a missing constant");
        if (static_cast<CopyKind>(op.sub) == CopyKind::DeviceToHost && !d_.is_capture)
          fail(where, " reads to the host, which only session captures may hold");
        break;
      case OpCode::Fill:
        if (op.elem_size != 1 && op.elem_size != 2 && op.elem_size != 4 && op.elem_size != 8)
          fail(where, " has an invalid element size " + std::to_string(op.elem_size));
        break;
      case OpCode::Launch:
        check_launch(where, op);
        break;
      case OpCode::Reduce:
        if (op.sub > static_cast<uint8_t>(ReduceOp::Or))
          fail(where, " has an invalid reduction");
        if (!reduce_defined(static_cast<ReduceOp>(op.sub), op.type))
          fail(where, " reduces " + std::string(to_string(op.type)) + " elements with reduction " +
                          std::to_string(op.sub) + ", which is not defined for them");
        check_slot_types(where, op, op.type, op.type);
        break;
      case OpCode::PrefixSum:
        if (!is_valid(op.type) || op.type == ScalarType::Bool)
          fail(where, " sums elements of an invalid or bool type");
        check_slot_types(where, op, op.type, op.type);
        break;
      case OpCode::Compress:
        // The count it leaves in the destination is that slot's size: uint32 indices only.
        check_slot_types(where, op, ScalarType::Bool, ScalarType::UInt32);
        break;
      case OpCode::Collective:
        check_collective(where, op);
        break;
      case OpCode::Sync:
        break;
    }
  }

  void check_launch(const Item& where, const Op& op) const {
    if (op.kernel >= d_.kernels.size())
      fail(where, " names kernel " + std::to_string(op.kernel) + " of " +
                      std::to_string(d_.kernels.size()));
    if (op.arg_begin > op.arg_end || op.arg_end > d_.args.size())
      fail(where, " has an invalid argument range");
    const KernelIR& ir = *d_.kernels[op.kernel];
    if (op.arg_end - op.arg_begin != ir.params.size())
      fail(where, " passes " + std::to_string(op.arg_end - op.arg_begin) +
                      " arguments to a kernel with " + std::to_string(ir.params.size()) +
                      " parameters");
    for (uint32_t a = op.arg_begin; a < op.arg_end; ++a)
      if (d_.args[a].is_buffer != (ir.params[a - op.arg_begin].kind != ParamKind::Scalar))
        fail(where, " argument " + std::to_string(a - op.arg_begin) +
                        " does not match its parameter's kind");
  }

  void check_collective(const Item& where, const Op& op) const {
    if (op.sub > static_cast<uint8_t>(CollectiveKind::SendRecv))
      fail(where, " has an invalid collective kind " + std::to_string(op.sub));
    auto kind = static_cast<CollectiveKind>(op.sub);
    if (!is_valid(op.type))
      fail(where, " has an invalid element type");
    if (kind == CollectiveKind::AllReduce &&
        (op.flag > static_cast<uint8_t>(ReduceOp::Or) ||
         !reduce_defined(static_cast<ReduceOp>(op.flag), op.type)))
      fail(where, " reduces " + std::string(to_string(op.type)) + " elements with reduction " +
                      std::to_string(op.flag) + ", which is not defined for them");
    bool sendrecv = kind == CollectiveKind::SendRecv;
    if (sendrecv && !CollectivePeers::valid_modes(op.flag))
      fail(where, " names its peers in unknown modes (flag " + std::to_string(op.flag) + ")");
    if (kind != CollectiveKind::AllReduce && !sendrecv && op.flag != 0)
      fail(where, " has a reduction but is no all_reduce");
    check_slot_types(where, op, op.type, op.type);
    // The op sets the destination's size and may replace its buffer: a whole slot of its own.
    if (op.dst_offset != 0 || d_.slots[op.dst].origin != SlotOrigin::Alloc)
      fail(where, " writes its result into part of a slot or into an input");
    if (op.elem_size < 1 || op.elem_size > CollectivePeers::kMaxRank + 1)
      fail(where, " was recorded with " + std::to_string(op.elem_size) + " ranks");
    CollectivePeers p = collective_peers(op);
    for (const Op& first : d_.ops)
      if (first.code == OpCode::Collective) {
        if (first.elem_size != op.elem_size || collective_peers(first).rank != p.rank)
          fail(where,
               " was recorded on another rank or rank count than the recording's first "
               "collective");
        break;
      }
    auto n = static_cast<int>(op.elem_size);
    auto in_range = [&](int r, bool none_ok) { return (none_ok && r == -1) || (r >= 0 && r < n); };
    bool ok = in_range(p.rank, false);
    if (kind == CollectiveKind::Broadcast)
      ok = ok && in_range(p.peer, false) && p.source == -1;
    else if (sendrecv)  // an offset (a relative peer) may be any: it resolves at replay
      ok = ok && (p.peer_mode != PeerMode::Absolute || in_range(p.peer, true)) &&
           (p.source_mode != PeerMode::Absolute || in_range(p.source, true));
    else
      ok = ok && p.peer == -1 && p.source == -1;
    if (!ok || (op.value >> 63) != 0)
      fail(where, " names ranks outside the " + std::to_string(n) + " it was recorded with");
  }

  /// Reduce, PrefixSum, Compress: the element types of the source and destination slots.
  void check_slot_types(const Item& where, const Op& op, ScalarType src, ScalarType dst) const {
    check_slot(op.src, where);
    check_slot(op.dst, where);
    if (d_.slots[op.src].type != src || d_.slots[op.dst].type != dst)
      fail(where, " reads " + std::string(to_string(d_.slots[op.src].type)) + " slot " +
                      std::to_string(op.src) + " into " + to_string(d_.slots[op.dst].type) +
                      " slot " + std::to_string(op.dst) + " (needs " + to_string(src) + " into " +
                      to_string(dst) + ")");
  }

  // --- lifetimes: walk the ops in order ----------------------------------------------------
  void check_lifetimes() const {
    enum : uint8_t { kDead = 0, kLive = 1, kWritten = 2, kReleased = 3 };

    std::vector<uint8_t> state(d_.slots.size(), kDead);
    for (size_t s = 0; s < d_.slots.size(); ++s)
      if (d_.slots[s].origin != SlotOrigin::Alloc)
        state[s] = kWritten;
    std::vector<SlotUse> uses;
    for (size_t i = 0; i < d_.ops.size(); ++i) {
      const Op& op = d_.ops[i];
      Item where = op_item(i, op);
      if (op.code == OpCode::Alloc) {
        if (op.src != kNone) {  // the donor ends here
          if (state[op.src] == kDead || state[op.src] == kReleased)
            fail(where, " takes over the buffer of slot " + std::to_string(op.src) +
                            ", which is not live");
          state[op.src] = kReleased;
        }
        state[op.dst] = kLive;
        continue;
      }
      if (op.code == OpCode::Release) {
        if (state[op.dst] == kDead || state[op.dst] == kReleased)
          fail(where, " releases slot " + std::to_string(op.dst) + " which is not live");
        state[op.dst] = kReleased;
        continue;
      }
      // The slots the op names (what a replay touches), in lifetime order: reads need a
      // written slot, writes a live one. The access list (for dumps) may only repeat them.
      op_uses(d_, op, uses);
      for (const SlotUse& u : uses) {
        check_slot(u.slot, where);
        uint8_t st = state[u.slot];
        if (st == kDead || st == kReleased)
          fail(where, " uses slot " + std::to_string(u.slot) + " outside its lifetime");
        if (u.read && st != kWritten && !d_.is_capture)
          fail(where, " reads slot " + std::to_string(u.slot) + " before anything wrote it");
      }
      for (const SlotUse& u : uses)
        if (u.write)
          state[u.slot] = kWritten;
      for (uint32_t a = op.access_begin; a < op.access_end; ++a) {
        const Access& acc = d_.accesses[a];
        bool listed = false;
        for (const SlotUse& u : uses)
          listed |= u.slot == acc.slot && (acc.write ? u.write : u.read);
        if (!listed)
          fail(where, " lists an access to slot " + std::to_string(acc.slot) +
                          " that the op does not make");
      }
    }
    for (size_t k = 0; k < d_.outputs.size(); ++k) {
      uint8_t st = state[d_.outputs[k].slot];
      if (st != kWritten)
        fail(item(Table::Outputs, "output", k),
             " (slot " + std::to_string(d_.outputs[k].slot) + ") is " +
                 (st == kReleased ? "released" : "never written") + " by the recording");
    }
  }

  const RecordingData& d_;
  std::vector<std::shared_ptr<const KernelIR>>* vouched_;
};

}  // namespace

std::optional<ValidationIssue> RecordingData::first_issue() const {
  return RecordingValidator(*this, nullptr).run();
}

void RecordingData::validate() const {
  if (std::optional<ValidationIssue> issue = first_issue())
    throw FormatError(issue->message());
}

uint64_t recording_validations() {
  return g_recording_validations.load(std::memory_order_relaxed);
}

ValidatedRecording::ValidatedRecording() {
  static const auto empty = std::make_shared<const RecordingData>();
  data_ = empty;
}

std::variant<ValidatedRecording, ValidationIssue> ValidatedRecording::try_check(
    RecordingData data) {
  std::vector<std::shared_ptr<const KernelIR>> vouched;
  vouched.reserve(data.kernels.size());
  if (std::optional<ValidationIssue> issue = RecordingValidator(data, &vouched).run())
    return std::move(*issue);
  data.kernels = std::move(vouched);
  return ValidatedRecording(std::make_shared<const RecordingData>(std::move(data)));
}

ValidatedRecording ValidatedRecording::check(RecordingData data) {
  auto checked = try_check(std::move(data));
  if (auto* issue = std::get_if<ValidationIssue>(&checked))
    throw FormatError(issue->message());
  return std::get<ValidatedRecording>(std::move(checked));
}

ValidatedRecording ValidatedRecording::check(std::shared_ptr<const RecordingData> data) {
  if (!data)
    throw FormatError("invalid recording: there is none (a null recording)");
  data->validate();
  return ValidatedRecording(std::move(data));
}

std::string RecordingData::summary() const {
  return std::to_string(ops.size()) + " ops, " + std::to_string(kernels.size()) + " kernels, " +
         std::to_string(slots.size()) + " slots, " + std::to_string(inputs.size()) + " inputs, " +
         std::to_string(outputs.size()) + " outputs, " + std::to_string(guards.size()) + " guards";
}

}  // namespace ff::rec
