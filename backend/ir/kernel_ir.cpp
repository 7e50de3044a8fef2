// Kernel IR: canonical serialisation (the kernel's identity), validation, listing.
#include "backend/ir/kernel_ir.h"

#include <cstring>

#include "backend/ir/size_expr.h"
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
      "index",   "literal", "scalar",  "load",        "load_broadcast",
      "gather",  "store",   "scatter", "scatter_add", "neg",
      "not",     "abs",     "sqrt",    "exp",         "log",
      "sin",     "cos",     "floor",   "ceil",        "cast",
      "bitcast", "add",     "sub",     "mul",         "div",
      "mod",     "min",     "max",     "and",         "or",
      "xor",     "shl",     "shr",     "eq",          "ne",
      "lt",      "le",      "gt",      "ge",          "fma",
      "select"};
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

KernelIR KernelIR::deserialize(std::span<const std::byte> bytes) {
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
  try {
    ir.validate();
  } catch (const Error& e) {
    fail(e.what());  // bytes from outside: a damaged kernel is a format error
  }
  ir.finalize();
  return ir;
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

void KernelIR::validate() const {
  auto fail = [&](size_t k, const std::string& what) {
    throw Error("kernel IR instruction " + std::to_string(k) + " (" +
                (k < instrs.size() ? ff::to_string(instrs[k].op) : "?") + "): " + what);
  };
  for (size_t i = 0; i < params.size(); ++i) {
    if (static_cast<uint8_t>(params[i].kind) > 3)
      throw Error("kernel IR parameter " + std::to_string(i) + ": invalid kind");
    if (!is_valid(params[i].type))
      throw Error("kernel IR parameter " + std::to_string(i) + ": invalid type");
  }
  auto is_side_effect = [](IrOp op) {
    return op == IrOp::Store || op == IrOp::Scatter || op == IrOp::ScatterAdd;
  };
  for (size_t k = 0; k < instrs.size(); ++k) {
    const IrInstr& in = instrs[k];
    if (static_cast<unsigned>(in.op) >= kNumIrOps)
      fail(k, "invalid opcode " + std::to_string(static_cast<unsigned>(in.op)));
    if (!is_valid(in.type))
      fail(k, "invalid type");
    auto value = [&](uint32_t v, const char* role) -> ScalarType {
      if (v >= k)
        fail(k, std::string(role) + " operand " + std::to_string(v) +
                    " does not name an earlier instruction");
      if (is_side_effect(instrs[v].op))
        fail(k, std::string(role) + " operand " + std::to_string(v) + " is a side effect");
      return instrs[v].type;
    };
    auto param = [&](uint32_t p, const char* role) -> const IrParam& {
      if (p >= params.size())
        fail(k, std::string(role) + " parameter " + std::to_string(p) + " out of range");
      return params[p];
    };
    auto buffer = [&](uint32_t p, bool reads, bool writes) {
      const IrParam& pr = param(p, "buffer");
      bool ok = pr.kind == ParamKind::BufferInOut || (pr.kind == ParamKind::BufferIn && !writes) ||
                (pr.kind == ParamKind::BufferOut && !reads);
      if (!ok)
        fail(k, std::string("parameter ") + std::to_string(p) + " is '" + ff::to_string(pr.kind) +
                    "', unusable here");
      if (pr.type != in.type)
        fail(k, "buffer type " + std::string(ff::to_string(pr.type)) + " differs from " +
                    ff::to_string(in.type));
    };
    auto scalar_u64 = [&](uint32_t p) {
      const IrParam& pr = param(p, "bound");
      if (pr.kind != ParamKind::Scalar || pr.type != ScalarType::UInt64)
        fail(k, "bound parameter must be a uint64 scalar");
    };
    auto same = [&](ScalarType t, const char* role) {
      if (t != in.type)
        fail(k, std::string(role) + " has type " + ff::to_string(t) + ", expected " +
                    ff::to_string(in.type));
    };
    auto report = [&] {
      if (in.flags & kIrFlagReportRange) {
        if (in.imm >= params.size())
          fail(k, "report parameter " + std::to_string(in.imm) + " out of range");
        const IrParam& pr = param(static_cast<uint32_t>(in.imm), "report");
        if (pr.kind != ParamKind::BufferInOut || pr.type != ScalarType::UInt64)
          fail(k, "range report parameter must be an inout uint64 buffer");
      }
    };
    ScalarType t = in.type;
    bool num = t != ScalarType::Bool;
    switch (in.op) {
      case IrOp::Index:
        if (!num)
          fail(k, "index cannot be bool");
        break;
      case IrOp::Literal:
        break;
      case IrOp::Scalar:
        if (param(in.a, "scalar").kind != ParamKind::Scalar || params[in.a].type != t)
          fail(k, "must name a scalar parameter of its type");
        break;
      case IrOp::Load:
      case IrOp::LoadBroadcast:
        buffer(in.a, true, false);
        break;
      case IrOp::Gather:
        buffer(in.a, true, false);
        if (!is_integer(value(in.b, "index")))
          fail(k, "index must be an integer");
        if (value(in.c, "mask") != ScalarType::Bool)
          fail(k, "mask must be bool");
        scalar_u64(in.d);
        report();
        break;
      case IrOp::Store:
        buffer(in.a, false, true);
        same(value(in.b, "value"), "value");
        break;
      case IrOp::Scatter:
      case IrOp::ScatterAdd:
        buffer(in.a, true, true);
        if (in.op == IrOp::ScatterAdd && !num)
          fail(k, "scatter_add needs a numeric type");
        if (!is_integer(value(in.b, "index")))
          fail(k, "index must be an integer");
        if (value(in.c, "mask") != ScalarType::Bool)
          fail(k, "mask must be bool");
        same(value(in.d, "value"), "value");
        scalar_u64(in.e);
        report();
        break;
      case IrOp::Neg:
      case IrOp::Abs:
        if (!num)
          fail(k, "needs a numeric type");
        same(value(in.a, "operand"), "operand");
        break;
      case IrOp::Not:
        if (is_float(t))
          fail(k, "needs an integer or bool type");
        same(value(in.a, "operand"), "operand");
        break;
      case IrOp::Sqrt:
      case IrOp::Exp:
      case IrOp::Log:
      case IrOp::Sin:
      case IrOp::Cos:
      case IrOp::Floor:
      case IrOp::Ceil:
        if (!is_float(t))
          fail(k, "needs a float type");
        same(value(in.a, "operand"), "operand");
        break;
      case IrOp::Cast:
        value(in.a, "operand");
        break;
      case IrOp::Bitcast: {
        ScalarType from = value(in.a, "operand");
        if (size_of(from) != size_of(t) || from == ScalarType::Bool || t == ScalarType::Bool)
          fail(k, "bitcast needs two non-bool types of one width");
        break;
      }
      case IrOp::Add:
      case IrOp::Sub:
      case IrOp::Mul:
      case IrOp::Div:
      case IrOp::Min:
      case IrOp::Max:
        if (!num)
          fail(k, "needs a numeric type");
        same(value(in.a, "lhs"), "lhs");
        same(value(in.b, "rhs"), "rhs");
        break;
      case IrOp::Mod:
      case IrOp::Shl:
      case IrOp::Shr:
        if (!is_integer(t))
          fail(k, "needs an integer type");
        same(value(in.a, "lhs"), "lhs");
        same(value(in.b, "rhs"), "rhs");
        break;
      case IrOp::And:
      case IrOp::Or:
      case IrOp::Xor:
        if (is_float(t))
          fail(k, "needs an integer or bool type");
        same(value(in.a, "lhs"), "lhs");
        same(value(in.b, "rhs"), "rhs");
        break;
      case IrOp::Eq:
      case IrOp::Ne:
      case IrOp::Lt:
      case IrOp::Le:
      case IrOp::Gt:
      case IrOp::Ge:
        if (t != ScalarType::Bool)
          fail(k, "comparison result must be bool");
        if (value(in.a, "lhs") != value(in.b, "rhs"))
          fail(k, "operands differ in type");
        break;
      case IrOp::Fma:
        if (!num)
          fail(k, "needs a numeric type");
        same(value(in.a, "a"), "a");
        same(value(in.b, "b"), "b");
        same(value(in.c, "c"), "c");
        break;
      case IrOp::Select:
        if (value(in.a, "mask") != ScalarType::Bool)
          fail(k, "mask must be bool");
        same(value(in.b, "true value"), "true value");
        same(value(in.c, "false value"), "false value");
        break;
    }
  }
}

std::string KernelIR::to_string() const {
  std::string s = "kernel " + hash.to_hex() + "\n";
  for (size_t i = 0; i < params.size(); ++i)
    s += "  param " + std::to_string(i) + ": " + ff::to_string(params[i].kind) + " " +
         ff::to_string(params[i].type) + "\n";
  for (size_t k = 0; k < instrs.size(); ++k) {
    const IrInstr& in = instrs[k];
    s += "  %" + std::to_string(k) + " = " + ff::to_string(in.op) + "." + ff::to_string(in.type);
    for (uint32_t v : {in.a, in.b, in.c, in.d, in.e})
      if (v != kNoOperand)
        s.append(" ").append(std::to_string(v));
    if (in.op == IrOp::Literal || in.flags)
      s.append(" imm=").append(std::to_string(in.imm));
    s.append("\n");
  }
  return s;
}

}  // namespace ff
