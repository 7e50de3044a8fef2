// Kernel IR: canonical serialisation (the kernel's identity), validation, listing.
#include "backend/ir/kernel_ir.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "backend/ir/ir_analysis.h"
#include "backend/ir/size_expr.h"
#include "common/assert.h"
#include "freezeframe/errors.h"

namespace ff {

const char* to_string(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return "bool";
    case ScalarType::Int32:
      return "int32";
    case ScalarType::UInt32:
      return "uint32";
    case ScalarType::Int64:
      return "int64";
    case ScalarType::UInt64:
      return "uint64";
    case ScalarType::Float32:
      return "float32";
    case ScalarType::Float64:
      return "float64";
  }
  return "invalid-type";
}

const char* to_string(IrOp op) {
  static const char* const names[kNumIrOps] = {
      "index",       "literal",     "scalar",     "load",        "load_broadcast",
      "gather",      "store",       "scatter",    "scatter_add", "neg",
      "not",         "abs",         "sqrt",       "exp",         "log",
      "sin",         "cos",         "floor",      "ceil",        "cast",
      "bitcast",     "add",         "sub",        "mul",         "div",
      "mod",         "min",         "max",        "and",         "or",
      "xor",         "shl",         "shr",        "eq",          "ne",
      "lt",          "le",          "gt",         "ge",          "fma",
      "select",      "tan",         "asin",       "acos",        "atan",
      "sinh",        "cosh",        "tanh",       "asinh",       "acosh",
      "atanh",       "exp2",        "log2",       "erf",         "cbrt",
      "round",       "trunc",       "popcnt",     "clz",         "ctz",
      "atan2",       "pow",         "copysign",   "scatter_mul", "scatter_min",
      "scatter_max", "scatter_and", "scatter_or", "scatter_inc", "loop",
      "loop_var",    "loop_cond",   "if",         "else",        "call",
      "case",        "yield",       "end",        "result"};
  auto i = static_cast<unsigned>(op);
  return i < kNumIrOps ? names[i] : "invalid-op";
}

const char* to_string(ParamKind k) {
  switch (k) {
    case ParamKind::BufferIn:
      return "in";
    case ParamKind::BufferOut:
      return "out";
    case ParamKind::BufferInOut:
      return "inout";
    case ParamKind::Scalar:
      return "scalar";
  }
  return "invalid-param";
}

const char* to_string(SizeOp op) {
  switch (op) {
    case SizeOp::Const:
      return "const";
    case SizeOp::BufferSize:
      return "size";
    case SizeOp::Add:
      return "+";
    case SizeOp::Sub:
      return "-";
    case SizeOp::Mul:
      return "*";
    case SizeOp::Div:
      return "/";
    case SizeOp::Min:
      return "min";
    case SizeOp::Max:
      return "max";
    case SizeOp::Rank:
      return "rank";
    case SizeOp::Ranks:
      return "ranks";
  }
  return "invalid-size-op";
}

const char* to_string(SizeCmp c) {
  switch (c) {
    case SizeCmp::Eq:
      return "==";
    case SizeCmp::Ne:
      return "!=";
    case SizeCmp::Lt:
      return "<";
    case SizeCmp::Le:
      return "<=";
    case SizeCmp::Gt:
      return ">";
    case SizeCmp::Ge:
      return ">=";
  }
  return "invalid-cmp";
}

std::string to_string(SizeProv prov, const std::function<std::string(const void*)>& name_buffer) {
  if (prov.empty())
    return "<const>";
  std::vector<std::string> stack;
  for (const SizeNode& n : prov) {
    switch (n.op) {
      case SizeOp::Const:
        stack.push_back(std::to_string(n.value));
        break;
      case SizeOp::BufferSize: {
        stack.push_back("width(" + name_buffer(n.buffer) + ")");
        break;
      }
      case SizeOp::Rank:
      case SizeOp::Ranks:
        stack.push_back(std::string("ff::dist::") + (n.op == SizeOp::Rank ? "rank" : "size") +
                        "()");
        break;
      default: {
        if (stack.size() < 2)
          return "<malformed>";
        std::string b = std::move(stack.back());
        stack.pop_back();
        std::string a = std::move(stack.back());
        stack.pop_back();
        if (n.op == SizeOp::Min || n.op == SizeOp::Max)
          stack.push_back(std::string(to_string(n.op)) + "(" + a + ", " + b + ")");
        else
          stack.push_back("(" + a + " " + to_string(n.op) + " " + b + ")");
      }
    }
  }
  return stack.size() == 1 ? stack[0] : "<malformed>";
}

namespace {

constexpr char kMagic[4] = {'F', 'F', 'I', 'R'};
constexpr uint16_t kIrVersion = kKernelIrVersion;

}  // namespace

std::vector<std::byte> KernelIR::serialize() const {
  const size_t n_params = params.size(), n_instrs = instrs.size();
  std::vector<std::byte> out(16 + n_params * 2 + n_instrs * sizeof(IrInstr));
  std::byte* p = out.data();
  const uint16_t version = kIrVersion, reserved = 0;
  const auto np = static_cast<uint32_t>(n_params), ni = static_cast<uint32_t>(n_instrs);
  std::memcpy(p, kMagic, 4);
  std::memcpy(p + 4, &version, 2);
  std::memcpy(p + 6, &reserved, 2);
  std::memcpy(p + 8, &np, 4);
  std::memcpy(p + 12, &ni, 4);
  p += 16;
  for (const IrParam& param : params) {
    p[0] = static_cast<std::byte>(param.kind);
    p[1] = static_cast<std::byte>(param.type);
    p += 2;
  }
  // IrInstr has no padding (static_assert in the header), so its bytes are canonical.
  if (n_instrs)
    std::memcpy(p, instrs.data(), n_instrs * sizeof(IrInstr));
  return out;
}

KernelIR KernelIR::parse(std::span<const std::byte> bytes) {
  auto fail = [](const std::string& what) { throw FormatError("kernel IR: " + what); };
  if (bytes.size() < 16 || std::memcmp(bytes.data(), kMagic, 4) != 0)
    fail("missing 'FFIR' magic or header shorter than 16 bytes");
  uint16_t version, reserved;
  uint32_t n_params, n_instrs;
  std::memcpy(&version, bytes.data() + 4, 2);
  std::memcpy(&reserved, bytes.data() + 6, 2);
  std::memcpy(&n_params, bytes.data() + 8, 4);
  std::memcpy(&n_instrs, bytes.data() + 12, 4);
  if (version != kIrVersion)
    fail("version " + std::to_string(version) + " is not the supported version " +
         std::to_string(kIrVersion));
  if (reserved != 0)  // one kernel, one byte string: its hash is its identity
    fail("reserved header field is " + std::to_string(reserved) + ", not 0");
  uint64_t need = 16 + uint64_t{n_params} * 2 + uint64_t{n_instrs} * sizeof(IrInstr);
  if (bytes.size() != need)
    fail("size " + std::to_string(bytes.size()) + " bytes does not match the " +
         std::to_string(need) + " bytes its header declares");
  KernelIR ir;
  ir.params.resize(n_params);
  const std::byte* p = bytes.data() + 16;
  for (auto& param : ir.params) {
    param.kind = static_cast<ParamKind>(p[0]);
    param.type = static_cast<ScalarType>(p[1]);
    p += 2;
  }
  ir.instrs.resize(n_instrs);
  if (n_instrs)  // data() may be null for an empty vector
    std::memcpy(ir.instrs.data(), p, n_instrs * sizeof(IrInstr));
  return ir;
}

KernelIR KernelIR::deserialize(std::span<const std::byte> bytes) {
  KernelIR ir = parse(bytes);
  ir.validate();  // ff::FormatError too: bytes from outside
  ir.finalize();
  return ir;
}

std::shared_ptr<const KernelIR> KernelIR::load(std::span<const std::byte> bytes) {
  return validated(parse(bytes));
}

std::shared_ptr<const KernelIR> KernelIR::validated(const KernelIR& ir) {
  if (ir.is_validated()) {  // valid, and its hash is right: the copy is too
    auto copy = std::make_shared<KernelIR>(ir);
    copy->validated_.set = true;
    return copy;
  }
  return validated(KernelIR(ir));
}

std::shared_ptr<const KernelIR> KernelIR::validated(KernelIR&& ir) {
  ir.validate();  // a KernelIR that can be moved from is never known valid
  auto shared = std::make_shared<KernelIR>(std::move(ir));
  shared->finalize();
  shared->validated_.set = true;
  return shared;  // const from here on
}

uint32_t KernelIR::emit(IrOp op, ScalarType type, std::initializer_list<uint32_t> operands,
                        uint64_t imm, uint16_t flags) {
  IrInstr in{};
  in.op = op;
  in.type = type;
  in.flags = flags;
  in.imm = imm;
  uint32_t* fields[] = {&in.a, &in.b, &in.c, &in.d, &in.e};
  size_t k = 0;
  for (uint32_t v : operands)
    if (k < std::size(fields))
      *fields[k++] = v;
  instrs.push_back(in);
  return static_cast<uint32_t>(instrs.size() - 1);
}

void KernelIR::finalize() {
  auto bytes = serialize();
  hash = hash128(bytes);
}

// Validation, one rule family per member: parameters; operand references (earlier values,
// parameters of the right kind and type); result and operand types per opcode family; flags.
// Every rule throws ff::FormatError naming the parameter or instruction.
namespace {

class IrValidator {
 public:
  explicit IrValidator(const KernelIR& ir) : ir_(ir) {}

  void run() {
    check_params();
    scope_.assign(ir_.instrs.size(), 0);
    open_parts_.assign(1, 0);
    for (k_ = 0; k_ < ir_.instrs.size(); ++k_) {
      const IrInstr& in = ir_.instrs[k_];
      if (static_cast<unsigned>(in.op) >= kNumIrOps)
        fail("invalid opcode " + std::to_string(static_cast<unsigned>(in.op)));
      if (!is_valid(in.type))
        fail("invalid type");
      check_flags(in);
      param_operands(in);
      scope_[k_] = open_parts_.back();
      if (structure(in))
        continue;
      if (leaf(in) || memory(in) || unary(in) || binary(in) || compare(in) || ternary(in))
        continue;
      FF_ASSERT(false, "kernel IR opcode {} has no validation rule", to_string(in.op));
    }
    if (!open_.empty())
      throw FormatError("kernel IR: the region opened at instruction " +
                        std::to_string(open_.back().begin) + " (" +
                        ff::to_string(ir_.instrs[open_.back().begin].op) + ") is not closed");
    if (n_results_ < results_.size())
      throw FormatError("kernel IR: the region closed by the last instruction needs " +
                        std::to_string(results_.size()) + " results, the kernel ends after " +
                        std::to_string(n_results_));
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError("kernel IR instruction " + std::to_string(k_) + " (" +
                      ff::to_string(ir_.instrs[k_].op) + "): " + what);
  }

  // --- parameters -------------------------------------------------------------------------
  void check_params() const {
    for (size_t i = 0; i < ir_.params.size(); ++i) {
      if (static_cast<uint8_t>(ir_.params[i].kind) > static_cast<uint8_t>(ParamKind::Scalar))
        throw FormatError("kernel IR parameter " + std::to_string(i) + ": invalid kind");
      if (!is_valid(ir_.params[i].type))
        throw FormatError("kernel IR parameter " + std::to_string(i) + ": invalid type");
    }
  }

  // --- flags: only gather/scatter may report ranges, no unknown bits ----------------------
  void check_flags(const IrInstr& in) const {
    if (in.flags & ~uint16_t{kIrFlagReportRange})
      fail("unknown flag bits " + std::to_string(in.flags & ~uint16_t{kIrFlagReportRange}));
    if (!(in.flags & kIrFlagReportRange))
      return;
    if (!op_facts(in.op).reports_range)
      fail("only gathers and scatters report ranges");
    if (in.imm >= ir_.params.size())
      fail("report parameter " + std::to_string(in.imm) + " out of range");
    const IrParam& pr = ir_.params[in.imm];
    if (pr.kind != ParamKind::BufferInOut || pr.type != ScalarType::UInt64)
      fail("range report parameter must be an inout uint64 buffer");
  }

  // --- operand references -----------------------------------------------------------------
  /// Every parameter the instruction names, checked for the access op_facts() gives it (the
  /// range report's parameter is check_flags'). Value operands are checked per opcode family
  /// below, with their types.
  void param_operands(const IrInstr& in) const {
    for_each_param(in, [&](const IrParamUse& u) {
      switch (u.access) {
        case ParamAccess::ScalarValue: {
          const IrParam& pr = param(u.param, "scalar");
          if (pr.kind != ParamKind::Scalar || pr.type != type())
            fail("must name a scalar parameter of its type");
          break;
        }
        case ParamAccess::Bound:
          bound(u.param);
          break;
        case ParamAccess::RangeReport:
          break;
        default:
          buffer(u.param, access_reads(u.access), access_writes(u.access));
          break;
      }
    });
  }

  /// The type of value operand `v`: an earlier instruction that defines a value, outside
  /// every region this instruction is not in.
  ScalarType value(uint32_t v, const char* role) const {
    if (v >= k_)
      fail(std::string(role) + " names value " + std::to_string(v) +
           ", which is not an earlier instruction");
    if (!op_facts(ir_.instrs[v].op).defines_value)
      fail(std::string(role) + " names value " + std::to_string(v) + ", a side effect");
    if (std::find(open_parts_.begin(), open_parts_.end(), scope_[v]) == open_parts_.end())
      fail(std::string(role) + " names value " + std::to_string(v) +
           ", defined inside a region part this instruction is not in");
    return ir_.instrs[v].type;
  }

  const IrParam& param(uint32_t p, const char* role) const {
    if (p >= ir_.params.size())
      fail(std::string(role) + " parameter " + std::to_string(p) + " out of range");
    return ir_.params[p];
  }

  /// A buffer parameter of the instruction's type that allows the access.
  void buffer(uint32_t p, bool reads, bool writes) const {
    const IrParam& pr = param(p, "buffer");
    bool ok = pr.kind == ParamKind::BufferInOut || (pr.kind == ParamKind::BufferIn && !writes) ||
              (pr.kind == ParamKind::BufferOut && !reads);
    if (!ok)
      fail("parameter " + std::to_string(p) + " is '" + ff::to_string(pr.kind) +
           "', unusable here");
    if (pr.type != type())
      fail("buffer type " + std::string(ff::to_string(pr.type)) + " differs from " +
           ff::to_string(type()));
  }

  void bound(uint32_t p) const {
    const IrParam& pr = param(p, "bound");
    if (pr.kind != ParamKind::Scalar || pr.type != ScalarType::UInt64)
      fail("bound parameter must be a uint64 scalar");
  }

  /// A value operand of the instruction's own type.
  void same(uint32_t v, const char* role) const {
    ScalarType t = value(v, role);
    if (t != type())
      fail(std::string(role) + " has type " + ff::to_string(t) + ", expected " +
           ff::to_string(type()));
  }

  void index_and_mask(uint32_t index, uint32_t mask) const {
    if (!is_integer(value(index, "index")))
      fail("index must be an integer");
    if (value(mask, "mask") != ScalarType::Bool)
      fail("mask must be bool");
  }

  ScalarType type() const { return ir_.instrs[k_].type; }

  bool numeric() const { return type() != ScalarType::Bool; }

  // --- regions: markers in order, carried values and yields matched, values scoped ---------
  struct OpenRegion {
    IrOp op = IrOp::LoopBegin;       // LoopBegin, IfBegin or CallBegin
    uint32_t begin = 0;              // its instruction
    uint64_t parts = 1;              // parts started so far
    int stage = 0;                   // loops: 0 carried values, 1 condition, 2 body
    std::vector<ScalarType> vars;    // loops: the carried values' types
    std::vector<ScalarType> yields;  // the current part's yields so far
    std::vector<ScalarType> first;   // branches and calls: the first part's yields
  };

  void new_part() { open_parts_.push_back(next_part_++); }

  /// Ends the current part of the innermost region: its yields must match the carried values
  /// (a loop) or the first part's (the other parts of a branch or call).
  void end_part(OpenRegion& r) {
    const std::vector<ScalarType>& want = r.op == IrOp::LoopBegin ? r.vars : r.first;
    if (r.op != IrOp::LoopBegin && r.parts == 1) {
      r.first = r.yields;
    } else if (r.yields != want) {
      fail("the part ends with " + std::to_string(r.yields.size()) +
           " yields that do not match the " + std::to_string(want.size()) +
           (r.op == IrOp::LoopBegin ? " carried values" : " of the region's first part") +
           " in number and types");
    }
    r.yields.clear();
    open_parts_.pop_back();
  }

  /// Region markers and the rules of order every instruction obeys around them; returns
  /// whether `in` was a marker.
  bool structure(const IrInstr& in) {
    RegionRole role = op_facts(in.op).region;
    if (n_results_ < results_.size()) {
      if (role != RegionRole::Result)
        fail("the region closed at instruction " + std::to_string(closed_at_) + " needs " +
             std::to_string(results_.size()) + " results, it has " + std::to_string(n_results_));
    } else if (role == RegionRole::Result) {
      fail("a result must follow the end of a region, one per yield");
    }
    if (!open_.empty()) {
      OpenRegion& r = open_.back();
      if (!r.yields.empty() && role != RegionRole::Yield && role != RegionRole::Part &&
          role != RegionRole::Close)
        fail("yields must end their part: only yields and the part's end may follow one");
      if (r.op == IrOp::LoopBegin && r.stage == 0 && role != RegionRole::Var)
        r.stage = 1;
    }
    if (role == RegionRole::None)
      return false;
    if (in.op != IrOp::LoopVar && in.op != IrOp::Yield && in.op != IrOp::Result &&
        type() != ScalarType::Bool)
      fail("a region marker has type bool");
    OpenRegion* r = open_.empty() ? nullptr : &open_.back();
    switch (in.op) {
      case IrOp::LoopBegin:
      case IrOp::IfBegin:
      case IrOp::CallBegin: {
        if (in.op == IrOp::IfBegin && value(in.a, "mask") != ScalarType::Bool)
          fail("mask must be bool");
        if (in.op == IrOp::CallBegin) {
          if (value(in.a, "index") != ScalarType::UInt32)
            fail("index must be uint32");
          if (in.imm < 1 || in.imm > kMaxCallTargets)
            fail("needs 1 to " + std::to_string(kMaxCallTargets) + " targets, not " +
                 std::to_string(in.imm));
        }
        if (open_.size() >= static_cast<size_t>(kMaxRegionDepth))
          fail("regions nest deeper than " + std::to_string(kMaxRegionDepth));
        OpenRegion opened;
        opened.op = in.op;
        opened.begin = static_cast<uint32_t>(k_);
        open_.push_back(std::move(opened));
        new_part();
        return true;
      }
      case IrOp::LoopVar:
        if (!r || r->op != IrOp::LoopBegin || r->stage != 0)
          fail("carried values must directly follow their LoopBegin");
        if (value(in.a, "initial value") != type() || in.a >= r->begin)
          fail("the initial value must be of the carried value's type, defined before the loop");
        r->vars.push_back(type());
        scope_[k_] = open_parts_.back();
        return true;
      case IrOp::LoopCond:
        if (!r || r->op != IrOp::LoopBegin || r->stage != 1)
          fail("a loop condition must end the condition part of a loop");
        if (value(in.a, "condition") != ScalarType::Bool)
          fail("condition must be bool");
        r->stage = 2;
        return true;
      case IrOp::IfElse:
      case IrOp::CallCase:
        if (!r || r->op != (in.op == IrOp::IfElse ? IrOp::IfBegin : IrOp::CallBegin) ||
            r->parts >= (in.op == IrOp::IfElse ? 2 : ir_.instrs[r->begin].imm))
          fail(in.op == IrOp::IfElse ? "else must separate the two parts of an if"
                                     : "more cases than the call has targets");
        end_part(*r);
        ++r->parts;
        new_part();
        return true;
      case IrOp::Yield:
        if (!r || (r->op == IrOp::LoopBegin && r->stage != 2))
          fail("a yield must end a loop body or a part of a branch or call");
        if (value(in.a, "value") != type())
          fail("a yield has its value's type");
        r->yields.push_back(type());
        return true;
      case IrOp::EndRegion: {
        if (!r)
          fail("no region is open");
        if (r->op == IrOp::LoopBegin && r->stage != 2)
          fail("the loop has no condition");
        uint64_t want = r->op == IrOp::LoopBegin ? 1
                        : r->op == IrOp::IfBegin ? 2
                                                 : ir_.instrs[r->begin].imm;
        if (r->parts != want)
          fail("the region has " + std::to_string(r->parts) + " parts, not " +
               std::to_string(want));
        end_part(*r);
        results_ = r->op == IrOp::LoopBegin ? r->vars : r->first;
        n_results_ = 0;
        closed_at_ = static_cast<uint32_t>(k_);
        open_.pop_back();
        scope_[k_] = open_parts_.back();
        return true;
      }
      case IrOp::Result:
        if (type() != results_[n_results_])
          fail("result " + std::to_string(n_results_) + " has type " +
               ff::to_string(results_[n_results_]));
        ++n_results_;
        return true;
      default:
        FF_ASSERT(false, "region marker {} has no validation rule", ff::to_string(in.op));
        return true;
    }
  }

  // --- opcode families (each returns whether it handled the opcode) ------------------------
  bool leaf(const IrInstr& in) const {
    switch (in.op) {
      case IrOp::Index:
        if (!numeric())
          fail("index cannot be bool");
        return true;
      case IrOp::Literal:
        return true;
      case IrOp::Scalar:  // its parameter: param_operands()
        return true;
      default:
        return false;
    }
  }

  // Their buffer and bound parameters: param_operands().
  bool memory(const IrInstr& in) const {
    switch (in.op) {
      case IrOp::Load:
      case IrOp::LoadBroadcast:
        return true;
      case IrOp::Gather:
        index_and_mask(in.b, in.c);
        return true;
      case IrOp::Store:
        same(in.b, "value");
        return true;
      case IrOp::Scatter:
      case IrOp::ScatterAdd:
      case IrOp::ScatterMul:
      case IrOp::ScatterMin:
      case IrOp::ScatterMax:
      case IrOp::ScatterAnd:
      case IrOp::ScatterOr:
        if (in.op != IrOp::Scatter && !numeric())
          fail("needs a numeric type");
        if ((in.op == IrOp::ScatterAnd || in.op == IrOp::ScatterOr) && !is_integer(type()))
          fail("needs an integer type");
        index_and_mask(in.b, in.c);
        same(in.d, "value");
        return true;
      case IrOp::ScatterInc:
        if (type() != ScalarType::UInt32)
          fail("needs type uint32");
        index_and_mask(in.b, in.c);
        return true;
      default:
        return false;
    }
  }

  bool unary(const IrInstr& in) const {
    switch (in.op) {
      case IrOp::Neg:
      case IrOp::Abs:
        if (!numeric())
          fail("needs a numeric type");
        break;
      case IrOp::Not:
        if (is_float(type()))
          fail("needs an integer or bool type");
        break;
      case IrOp::Sqrt:
      case IrOp::Exp:
      case IrOp::Log:
      case IrOp::Sin:
      case IrOp::Cos:
      case IrOp::Floor:
      case IrOp::Ceil:
      case IrOp::Tan:
      case IrOp::Asin:
      case IrOp::Acos:
      case IrOp::Atan:
      case IrOp::Sinh:
      case IrOp::Cosh:
      case IrOp::Tanh:
      case IrOp::Asinh:
      case IrOp::Acosh:
      case IrOp::Atanh:
      case IrOp::Exp2:
      case IrOp::Log2:
      case IrOp::Erf:
      case IrOp::Cbrt:
      case IrOp::Round:
      case IrOp::Trunc:
        if (!is_float(type()))
          fail("needs a float type");
        break;
      case IrOp::Popcnt:
      case IrOp::Clz:
      case IrOp::Ctz:
        if (!is_integer(type()))
          fail("needs an integer type");
        break;
      case IrOp::Cast:
        value(in.a, "operand");  // any type to any type
        return true;
      case IrOp::Bitcast: {
        ScalarType from = value(in.a, "operand");
        if (size_of(from) != size_of(type()) || from == ScalarType::Bool ||
            type() == ScalarType::Bool)
          fail("bitcast needs two non-bool types of one width");
        return true;
      }
      default:
        return false;
    }
    same(in.a, "operand");
    return true;
  }

  bool binary(const IrInstr& in) const {
    switch (in.op) {
      case IrOp::Add:
      case IrOp::Sub:
      case IrOp::Mul:
      case IrOp::Div:
      case IrOp::Min:
      case IrOp::Max:
        if (!numeric())
          fail("needs a numeric type");
        break;
      case IrOp::Mod:
      case IrOp::Shl:
      case IrOp::Shr:
        if (!is_integer(type()))
          fail("needs an integer type");
        break;
      case IrOp::And:
      case IrOp::Or:
      case IrOp::Xor:
        if (is_float(type()))
          fail("needs an integer or bool type");
        break;
      case IrOp::Atan2:
      case IrOp::Pow:
      case IrOp::Copysign:
        if (!is_float(type()))
          fail("needs a float type");
        break;
      default:
        return false;
    }
    same(in.a, "lhs");
    same(in.b, "rhs");
    return true;
  }

  bool compare(const IrInstr& in) const {
    switch (in.op) {
      case IrOp::Eq:
      case IrOp::Ne:
      case IrOp::Lt:
      case IrOp::Le:
      case IrOp::Gt:
      case IrOp::Ge:
        if (type() != ScalarType::Bool)
          fail("comparison result must be bool");
        if (value(in.a, "lhs") != value(in.b, "rhs"))
          fail("operands differ in type");
        return true;
      default:
        return false;
    }
  }

  bool ternary(const IrInstr& in) const {
    switch (in.op) {
      case IrOp::Fma:
        if (!numeric())
          fail("needs a numeric type");
        same(in.a, "a");
        same(in.b, "b");
        same(in.c, "c");
        return true;
      case IrOp::Select:
        if (value(in.a, "mask") != ScalarType::Bool)
          fail("mask must be bool");
        same(in.b, "true value");
        same(in.c, "false value");
        return true;
      default:
        return false;
    }
  }

  const KernelIR& ir_;
  size_t k_ = 0;
  std::vector<uint32_t> scope_;       // per instruction: the region part it belongs to (0: top)
  std::vector<uint32_t> open_parts_;  // the parts open at this instruction, outermost first
  uint32_t next_part_ = 1;
  std::vector<OpenRegion> open_;
  std::vector<ScalarType> results_;  // the Results the region just closed needs
  size_t n_results_ = 0;
  uint32_t closed_at_ = 0;
};

}  // namespace

namespace {
std::atomic<uint64_t> g_kernel_validations{0};
}  // namespace

void KernelIR::validate() const {
  g_kernel_validations.fetch_add(1, std::memory_order_relaxed);
  IrValidator(*this).run();
}

uint64_t kernel_validations() {
  return g_kernel_validations.load(std::memory_order_relaxed);
}

std::string KernelIR::to_string() const {
  std::string s = "kernel " + hash.to_hex() + "\n";
  for (size_t i = 0; i < params.size(); ++i)
    s += "  param " + std::to_string(i) + ": " + ff::to_string(params[i].kind) + " " +
         ff::to_string(params[i].type) + "\n";
  // Region contents are indented one step per level (region_depths()).
  std::vector<uint16_t> depth = region_depths(*this);
  for (size_t k = 0; k < instrs.size(); ++k) {
    const IrInstr& in = instrs[k];
    RegionRole role = op_facts(in.op).region;
    bool outdent = role == RegionRole::Open || role == RegionRole::Part ||
                   role == RegionRole::Close || role == RegionRole::Cond;
    s.append(2 * (1 + depth[k] - (outdent && depth[k] ? 1 : 0)), ' ');
    s += "%" + std::to_string(k) + " = " + ff::to_string(in.op) + "." + ff::to_string(in.type);
    for (uint32_t v : {in.a, in.b, in.c, in.d, in.e})
      if (v != kNoOperand)
        s.append(" ").append(std::to_string(v));
    if (in.op == IrOp::Literal || in.flags || in.op == IrOp::CallBegin ||
        (in.op == IrOp::LoopBegin && in.imm != kNoIterationLimit))
      s.append(" imm=").append(std::to_string(in.imm));
    s.append("\n");
  }
  return s;
}

}  // namespace ff
