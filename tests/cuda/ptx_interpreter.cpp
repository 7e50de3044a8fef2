// The PTX reference interpreter: a parser that decodes each instruction once into a compact
// form, and a SIMT scheduler that runs threads up to collective instructions.
#include "cuda/ptx_interpreter.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <unordered_map>

namespace ffcuda {

// ---------------------------------------------------------------------------------------
// Decoded form

enum class Ty : uint8_t {
  None,
  B8,
  B16,
  B32,
  B64,
  U8,
  U16,
  U32,
  U64,
  S8,
  S16,
  S32,
  S64,
  F32,
  F64,
  Pred
};

enum class Op : uint8_t {
  Mov,
  Ld,
  St,
  Cvta,
  Cvt,
  Add,
  Sub,
  AddC,
  Mul,
  Mad,
  Fma,
  Div,
  Rem,
  Min,
  Max,
  Neg,
  Abs,
  Not,
  And,
  Or,
  Xor,
  Shl,
  Shr,
  Clz,
  Popc,
  Sqrt,
  Setp,
  Selp,
  Bra,
  BrxIdx,  // brx.idx index, table: to the index-th label of a .branchtargets table
  Ret,
  Red,
  Atom,
  Membar,
  BarSync,
  Shfl,
  Vote
};

enum class Space : uint8_t { None, Param, Global, Shared };

// Modifiers packed per op: rounding for cvt, comparison for setp, part for mul/mad, shuffle mode.
enum Mod : uint8_t {
  kNone = 0,
  // cvt rounding
  kRn,
  kRz,
  kRm,
  kRp,
  kRni,
  kRzi,
  kRmi,
  kRpi,
  // mul / mad part
  kLo,
  kHi,
  kWide,
  // shfl
  kUp,
  kDown,
  kBfly,
  kIdx,
  // setp comparisons
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kEqu,
  kNeu,
  kLtu,
  kLeu,
  kGtu,
  kGeu,
  kNum,
  kNan,
};

enum class Special : uint8_t { TidX, NtidX, CtaidX, NctaidX, LaneId, LaneMaskLt };

struct Operand {
  enum Kind : uint8_t { None, Reg, Imm, Addr, Special, Symbol, Param, Label };

  Kind kind = None;
  bool negate = false;  // !%p
  int32_t reg = -1;     // Reg; Addr base register (or -1)
  int32_t sym = -1;     // Symbol; Addr base symbol (or -1)
  int32_t param = -1;   // Param; Addr base parameter (or -1)
  uint64_t imm = 0;     // Imm bits; Addr offset; Special id; Label target
};

// The operation of red / atom.
enum class AtomOp : uint8_t { Add, And, Or, Xor, Min, Max, Exch, Cas };

struct Instr {
  Op op;
  AtomOp atom = AtomOp::Add;
  Ty t = Ty::None, t2 = Ty::None;  // t2: cvt source type
  Mod mod = kNone;
  bool cc = false;  // add.cc / addc.cc
  Space space = Space::None;
  int32_t guard = -1;
  bool guard_neg = false;
  uint8_t n = 0;
  Operand o[5];
  int line = 0;
};

struct Symbol {
  Space space;
  std::vector<uint8_t> data;  // global: contents; shared: size only
  uint32_t shared_offset = 0;
};

struct Entry {
  std::string name;
  std::vector<std::string> params;
  std::vector<Instr> code;
  std::vector<std::vector<uint32_t>> tables;  // .branchtargets lists, as instruction indices
  uint32_t n_regs = 0;
  uint32_t shared_bytes = 0;
};

}  // namespace ffcuda

namespace ffcuda {
struct PtxProgram {
  std::vector<Entry> entries;
  std::vector<Symbol> symbols;
  std::unordered_map<std::string, int32_t> symbol_index;
};
}  // namespace ffcuda

namespace ffcuda {
namespace {

unsigned width(Ty t) {
  switch (t) {
    case Ty::B8:
    case Ty::U8:
    case Ty::S8:
      return 8;
    case Ty::B16:
    case Ty::U16:
    case Ty::S16:
      return 16;
    case Ty::B32:
    case Ty::U32:
    case Ty::S32:
    case Ty::F32:
      return 32;
    case Ty::B64:
    case Ty::U64:
    case Ty::S64:
    case Ty::F64:
      return 64;
    case Ty::Pred:
      return 1;
    case Ty::None:
      break;
  }
  return 0;
}

bool is_signed(Ty t) {
  return t == Ty::S8 || t == Ty::S16 || t == Ty::S32 || t == Ty::S64;
}

bool is_fp(Ty t) {
  return t == Ty::F32 || t == Ty::F64;
}

bool parse_type(const std::string& s, Ty& t) {
  static const std::unordered_map<std::string, Ty> types = {
      {"b8", Ty::B8},   {"b16", Ty::B16}, {"b32", Ty::B32}, {"b64", Ty::B64}, {"u8", Ty::U8},
      {"u16", Ty::U16}, {"u32", Ty::U32}, {"u64", Ty::U64}, {"s8", Ty::S8},   {"s16", Ty::S16},
      {"s32", Ty::S32}, {"s64", Ty::S64}, {"f32", Ty::F32}, {"f64", Ty::F64}, {"pred", Ty::Pred}};
  auto it = types.find(s);
  if (it == types.end())
    return false;
  t = it->second;
  return true;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos)
    return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split_operands(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '[' || c == '{')
      ++depth;
    if (c == ']' || c == '}')
      --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty())
    out.push_back(trim(cur));
  return out;
}

bool parse_int(const std::string& s, uint64_t& v) {
  if (s.empty())
    return false;
  bool neg = s[0] == '-';
  std::string d = neg ? s.substr(1) : s;
  if (d.empty())
    return false;
  try {
    size_t used = 0;
    uint64_t x;
    if (d.size() > 2 && d[0] == '0' && (d[1] == 'x' || d[1] == 'X'))
      x = std::stoull(d.substr(2), &used, 16), used += 2;
    else if (std::isdigit(static_cast<unsigned char>(d[0])))
      x = std::stoull(d, &used, 10);
    else
      return false;
    if (used != d.size())
      return false;
    v = neg ? static_cast<uint64_t>(-static_cast<int64_t>(x)) : x;
    return true;
  } catch (...) {
    return false;
  }
}

// The types ptxas 13 accepts for red/atom (sm_75 ... sm_90) among those the interpreter
// runs: add on .u32/.s32/.u64/.f32/.f64, min and max on signed or unsigned integers (neither .b
// nor floats), the bitwise operations, exch and cas on .b32/.b64 only (checked with ptxas:
// red.and.u32, red.min.b32, red.add.s64, red.min.f32 and atom.cas.u32 are refused).
bool atomic_type_ok(AtomOp op, Ty t) {
  switch (op) {
    case AtomOp::Add:
      return t == Ty::U32 || t == Ty::S32 || t == Ty::U64 || t == Ty::F32 || t == Ty::F64;
    case AtomOp::Min:
    case AtomOp::Max:
      return t == Ty::U32 || t == Ty::S32 || t == Ty::U64 || t == Ty::S64;
    default:
      return t == Ty::B32 || t == Ty::B64;
  }
}

class Parser {
 public:
  explicit Parser(PtxProgram& p) : prog_(p) {}

  void parse(const std::string& text);

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw PtxError("PTX line " + std::to_string(line_no_) + ": " + what + " in: " + line_);
  }

  int32_t reg(const std::string& name) {
    auto [it, fresh] = regs_.try_emplace(name, static_cast<int32_t>(regs_.size()));
    (void)fresh;
    return it->second;
  }

  Operand operand(const std::string& s, Entry& e);
  void instruction(const std::string& text, Entry& e);
  void global_decl(const std::string& text);

  PtxProgram& prog_;
  std::unordered_map<std::string, int32_t> regs_;
  std::unordered_map<std::string, uint32_t> labels_;
  std::vector<std::pair<size_t, std::string>> fixups_;     // instruction index, label
  std::unordered_map<std::string, uint32_t> table_index_;  // .branchtargets name -> table
  std::vector<std::vector<std::string>> table_labels_;     // per table: its labels
  std::string line_;
  int line_no_ = 0;
};

Operand Parser::operand(const std::string& s, Entry& e) {
  Operand o;
  if (s.empty())
    fail("empty operand");
  if (s[0] == '[') {
    if (s.back() != ']')
      fail("bad address " + s);
    std::string in = trim(s.substr(1, s.size() - 2));
    o.kind = Operand::Addr;
    std::string base = in;
    size_t plus = in.find('+');
    if (plus != std::string::npos) {
      base = trim(in.substr(0, plus));
      if (!parse_int(trim(in.substr(plus + 1)), o.imm))
        fail("bad offset " + s);
    }
    if (base[0] == '%') {
      o.reg = reg(base);
    } else {
      auto p = std::find(e.params.begin(), e.params.end(), base);
      if (p != e.params.end()) {
        o.param = static_cast<int32_t>(p - e.params.begin());
      } else {
        auto it = prog_.symbol_index.find(base);
        if (it == prog_.symbol_index.end())
          fail("unknown address base " + base);
        o.sym = it->second;
      }
    }
    return o;
  }
  if (s[0] == '!' || s[0] == '%') {
    bool neg = s[0] == '!';
    std::string name = neg ? s.substr(1) : s;
    static const std::unordered_map<std::string, Special> specials = {
        {"%tid.x", Special::TidX},     {"%ntid.x", Special::NtidX},
        {"%ctaid.x", Special::CtaidX}, {"%nctaid.x", Special::NctaidX},
        {"%laneid", Special::LaneId},  {"%lanemask_lt", Special::LaneMaskLt}};
    if (auto it = specials.find(name); it != specials.end()) {
      o.kind = Operand::Special;
      o.imm = static_cast<uint64_t>(it->second);
      return o;
    }
    if (name.find('.') != std::string::npos)
      fail("unknown special register " + name);
    o.kind = Operand::Reg;
    o.reg = reg(name);
    o.negate = neg;
    return o;
  }
  if (s.size() == 10 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F')) {
    o.kind = Operand::Imm;
    o.imm = std::stoull(s.substr(2), nullptr, 16);
    return o;
  }
  if (s.size() == 18 && s[0] == '0' && (s[1] == 'd' || s[1] == 'D')) {
    o.kind = Operand::Imm;
    o.imm = std::stoull(s.substr(2), nullptr, 16);
    return o;
  }
  if (parse_int(s, o.imm)) {
    o.kind = Operand::Imm;
    return o;
  }
  if (auto it = prog_.symbol_index.find(s); it != prog_.symbol_index.end()) {
    o.kind = Operand::Symbol;
    o.sym = it->second;
    return o;
  }
  // A label (resolved at the end of the entry).
  o.kind = Operand::Label;
  fixups_.emplace_back(e.code.size(), s);
  return o;
}

void Parser::instruction(const std::string& text_in, Entry& e) {
  std::string text = text_in;
  Instr in{};
  in.line = line_no_;
  if (text[0] == '@') {
    size_t sp = text.find_first_of(" \t");
    std::string g = text.substr(1, sp - 1);
    in.guard_neg = g[0] == '!';
    in.guard = reg(in.guard_neg ? g.substr(1) : g);
    text = trim(text.substr(sp));
  }
  size_t sp = text.find_first_of(" \t");
  std::string opcode = sp == std::string::npos ? text : text.substr(0, sp);
  std::string rest = sp == std::string::npos ? "" : trim(text.substr(sp));
  std::vector<std::string> parts;
  {
    std::stringstream ss(opcode);
    std::string p;
    while (std::getline(ss, p, '.'))
      parts.push_back(p);
  }
  const std::string& name = parts[0];
  static const std::unordered_map<std::string, Op> ops = {
      {"mov", Op::Mov},   {"ld", Op::Ld},         {"st", Op::St},       {"cvta", Op::Cvta},
      {"cvt", Op::Cvt},   {"add", Op::Add},       {"sub", Op::Sub},     {"addc", Op::AddC},
      {"mul", Op::Mul},   {"mad", Op::Mad},       {"fma", Op::Fma},     {"div", Op::Div},
      {"rem", Op::Rem},   {"min", Op::Min},       {"max", Op::Max},     {"neg", Op::Neg},
      {"abs", Op::Abs},   {"not", Op::Not},       {"and", Op::And},     {"or", Op::Or},
      {"xor", Op::Xor},   {"shl", Op::Shl},       {"shr", Op::Shr},     {"clz", Op::Clz},
      {"popc", Op::Popc}, {"sqrt", Op::Sqrt},     {"setp", Op::Setp},   {"selp", Op::Selp},
      {"bra", Op::Bra},   {"ret", Op::Ret},       {"exit", Op::Ret},    {"red", Op::Red},
      {"atom", Op::Atom}, {"membar", Op::Membar}, {"bar", Op::BarSync}, {"shfl", Op::Shfl},
      {"vote", Op::Vote}, {"brx", Op::BrxIdx}};
  auto it = ops.find(name);
  if (it == ops.end())
    fail("unknown instruction " + name);
  in.op = it->second;
  static const std::unordered_map<std::string, Mod> mods = {
      {"rn", kRn},     {"rz", kRz},   {"rm", kRm},     {"rp", kRp},     {"rni", kRni},
      {"rzi", kRzi},   {"rmi", kRmi}, {"rpi", kRpi},   {"lo", kLo},     {"hi", kHi},
      {"wide", kWide}, {"up", kUp},   {"down", kDown}, {"bfly", kBfly}, {"idx", kIdx},
      {"eq", kEq},     {"ne", kNe},   {"lt", kLt},     {"le", kLe},     {"gt", kGt},
      {"ge", kGe},     {"equ", kEqu}, {"neu", kNeu},   {"ltu", kLtu},   {"leu", kLeu},
      {"gtu", kGtu},   {"geu", kGeu}, {"num", kNum},   {"nan", kNan}};
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& m = parts[i];
    Ty t;
    if (parse_type(m, t)) {
      if (in.t == Ty::None)
        in.t = t;
      else if (in.t2 == Ty::None)
        in.t2 = t;
      else
        fail("too many types");
      continue;
    }
    if (auto mit = mods.find(m); mit != mods.end()) {
      if (in.mod != kNone && !(in.op == Op::Setp))
        fail("two modifiers");
      in.mod = mit->second;
      continue;
    }
    if (m == "cc") {
      in.cc = true;
    } else if (m == "param") {
      in.space = Space::Param;
    } else if (m == "global") {
      in.space = Space::Global;
    } else if (m == "shared") {
      in.space = Space::Shared;
    } else if ((in.op == Op::Red || in.op == Op::Atom) &&
               (m == "add" || m == "and" || m == "or" || m == "xor" || m == "exch" || m == "cas" ||
                m == "min" || m == "max")) {
      static const std::unordered_map<std::string, AtomOp> atom_ops = {
          {"add", AtomOp::Add},   {"and", AtomOp::And}, {"or", AtomOp::Or},   {"xor", AtomOp::Xor},
          {"exch", AtomOp::Exch}, {"cas", AtomOp::Cas}, {"min", AtomOp::Min}, {"max", AtomOp::Max}};
      in.atom = atom_ops.at(m);
      if (in.op == Op::Red && (in.atom == AtomOp::Exch || in.atom == AtomOp::Cas))
        fail("red." + m + " does not exist (atom." + m + ")");
    } else if (m == "to" || m == "volatile" || m == "nc" || m == "uni" || m == "sync" ||
               m == "gl" || m == "ballot" || m == "sat") {
      if (m == "sat")
        fail("cvt.sat is not used by the generator");
      // qualifiers without effect here
    } else if (std::all_of(m.begin(), m.end(), ::isdigit) && in.op == Op::BarSync) {
    } else {
      fail("unknown modifier ." + m);
    }
  }
  if ((in.op == Op::Cvta && in.space != Space::Global))
    fail("cvta other than to.global");
  std::vector<std::string> opnds = split_operands(rest);
  if (in.op == Op::BarSync)
    opnds.clear();  // bar.sync 0
  if (opnds.size() > 5)
    fail("too many operands");
  if (in.op == Op::Red || in.op == Op::Atom) {
    if (!atomic_type_ok(in.atom, in.t))
      fail("a type ptxas refuses for this atomic operation");
    size_t want = (in.op == Op::Atom ? 3u : 2u) + (in.atom == AtomOp::Cas ? 1u : 0u);
    if (opnds.size() != want)
      fail("wrong operand count for red/atom");
  }
  if (in.op == Op::BrxIdx) {
    // brx.idx %r, table (a table declared before; uniform or predicated forms are not emitted)
    if (in.mod != kIdx || opnds.size() != 2 || in.t != Ty::None)
      fail("brx other than brx.idx index, table");
    auto t = table_index_.find(opnds[1]);
    if (t == table_index_.end())
      fail("brx.idx names no .branchtargets declared before it: " + opnds[1]);
    in.o[in.n++] = operand(opnds[0], e);
    in.o[in.n].kind = Operand::Imm;
    in.o[in.n++].imm = t->second;
    e.code.push_back(in);
    return;
  }
  for (const std::string& s : opnds)
    in.o[in.n++] = operand(s, e);
  e.code.push_back(in);
}

void Parser::global_decl(const std::string& text) {
  // .global .align 8 .b64 name[N] = {v, v, ...}
  size_t lb = text.find('['), rb = text.find(']');
  if (lb == std::string::npos || rb == std::string::npos)
    fail("global without an array size");
  size_t sp = text.rfind(' ', lb);
  std::string name = text.substr(sp + 1, lb - sp - 1);
  size_t count = std::stoul(text.substr(lb + 1, rb - lb - 1));
  Ty t = Ty::B8;
  for (const char* ty : {".b64", ".u64", ".b32", ".u32", ".b8"})
    if (text.find(ty) != std::string::npos && text.find(ty) < lb) {
      parse_type(std::string(ty + 1), t);
      break;
    }
  unsigned bytes = width(t) / 8;
  Symbol s{Space::Global, std::vector<uint8_t>(count * bytes), 0};
  size_t lc = text.find('{'), rc = text.find('}');
  if (lc != std::string::npos) {
    auto vals = split_operands(text.substr(lc + 1, rc - lc - 1));
    if (vals.size() > count)
      fail("too many initialisers");
    for (size_t i = 0; i < vals.size(); ++i) {
      uint64_t v;
      if (!parse_int(vals[i], v))
        fail("bad initialiser " + vals[i]);
      std::memcpy(s.data.data() + i * bytes, &v, bytes);
    }
  }
  prog_.symbol_index[name] = static_cast<int32_t>(prog_.symbols.size());
  prog_.symbols.push_back(std::move(s));
}

void Parser::parse(const std::string& text) {
  std::stringstream ss(text);
  std::string raw;
  Entry* e = nullptr;
  bool in_params = false, in_body = false;
  std::string pending;  // a statement spread over lines (global initialisers)
  while (std::getline(ss, raw)) {
    ++line_no_;
    if (size_t c = raw.find("//"); c != std::string::npos)
      raw = raw.substr(0, c);
    std::string l = trim(raw);
    line_ = l;
    if (l.empty())
      continue;
    if (!in_body && !in_params) {
      if (l.rfind(".version", 0) == 0 || l.rfind(".target", 0) == 0 ||
          l.rfind(".address_size", 0) == 0 || l.rfind(".maxntid", 0) == 0 ||
          l.rfind(".reqntid", 0) == 0)
        continue;
      if (l.rfind(".global", 0) == 0 || !pending.empty()) {
        pending += l + " ";
        if (l.back() == ';') {
          global_decl(pending);
          pending.clear();
        }
        continue;
      }
      if (l.rfind(".visible .entry", 0) == 0 || l.rfind(".entry", 0) == 0) {
        prog_.entries.emplace_back();
        e = &prog_.entries.back();
        size_t open = l.find('(');
        std::string head = l.substr(0, open);
        e->name = trim(head.substr(head.rfind(' ') + 1));
        regs_.clear();
        labels_.clear();
        fixups_.clear();
        table_index_.clear();
        table_labels_.clear();
        in_params = l.find(')') == std::string::npos;
        continue;
      }
      if (l == "{" && e) {
        in_body = true;
        continue;
      }
      fail("unexpected module-level statement");
    }
    if (in_params) {
      if (l[0] == ')') {
        in_params = false;
        continue;
      }
      if (l.back() == ',')
        l.pop_back();
      size_t sp = l.rfind(' ');
      e->params.push_back(trim(l.substr(sp + 1)));
      continue;
    }
    // body
    if (l == "}") {
      for (auto& [index, label] : fixups_) {
        auto it = labels_.find(label);
        if (it == labels_.end())
          throw PtxError("PTX: unknown label " + label + " in " + e->name);
        Instr& ins = e->code[index];
        for (unsigned k = 0; k < ins.n; ++k)
          if (ins.o[k].kind == Operand::Label)
            ins.o[k].imm = it->second;
      }
      for (const std::vector<std::string>& names : table_labels_) {
        std::vector<uint32_t> targets;
        for (const std::string& label : names) {
          auto it = labels_.find(label);
          if (it == labels_.end())
            throw PtxError("PTX: unknown label " + label + " in a .branchtargets of " + e->name);
          targets.push_back(it->second);
        }
        e->tables.push_back(std::move(targets));
      }
      e->n_regs = static_cast<uint32_t>(regs_.size());
      in_body = false;
      e = nullptr;
      continue;
    }
    if (l.rfind(".reg", 0) == 0)
      continue;
    if (l.rfind(".shared", 0) == 0) {
      size_t lb = l.find('['), rb = l.find(']');
      size_t sp = l.rfind(' ', lb);
      std::string name = l.substr(sp + 1, lb - sp - 1);
      uint32_t size = static_cast<uint32_t>(std::stoul(l.substr(lb + 1, rb - lb - 1)));
      Symbol s{Space::Shared, {}, e->shared_bytes};
      e->shared_bytes += (size + 7) / 8 * 8;
      prog_.symbol_index[name] = static_cast<int32_t>(prog_.symbols.size());
      prog_.symbols.push_back(std::move(s));
      continue;
    }
    if (l.back() == ':') {
      labels_[l.substr(0, l.size() - 1)] = static_cast<uint32_t>(e->code.size());
      continue;
    }
    if (size_t d = l.find(": .branchtargets "); d != std::string::npos && l.back() == ';') {
      // name: .branchtargets L0, L1, ...; (the labels are resolved at the end of the entry)
      std::string name = trim(l.substr(0, d));
      std::vector<std::string> names = split_operands(l.substr(d + 17, l.size() - d - 18));
      if (names.empty() || table_index_.count(name))
        fail("an empty or repeated .branchtargets");
      table_index_[name] = static_cast<uint32_t>(table_labels_.size());
      table_labels_.push_back(std::move(names));
      continue;
    }
    if (l.back() != ';')
      fail("statement without ';'");
    l.pop_back();
    instruction(trim(l), *e);
  }
  if (in_body || in_params)
    throw PtxError("PTX: unterminated entry");
}

// ---------------------------------------------------------------------------------------
// Execution

float f32(uint64_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b));
}

double f64(uint64_t b) {
  return std::bit_cast<double>(b);
}

uint64_t bits(float v) {
  return std::bit_cast<uint32_t>(v);
}

uint64_t bits(double v) {
  return std::bit_cast<uint64_t>(v);
}

uint64_t mask(Ty t, uint64_t v) {
  unsigned w = width(t);
  if (t == Ty::Pred)
    return v != 0;
  return w >= 64 ? v : v & ((uint64_t{1} << w) - 1);
}

// Sign- or zero-extends a value of type t to 64 bits.
int64_t sext(Ty t, uint64_t v) {
  unsigned w = width(t);
  if (w >= 64)
    return static_cast<int64_t>(v);
  uint64_t m = uint64_t{1} << (w - 1);
  v &= (uint64_t{1} << w) - 1;
  return static_cast<int64_t>((v ^ m) - m);
}

template <class F>
F nan_aware_min(F a, F b) {
  if (std::isnan(a))
    return b;
  if (std::isnan(b))
    return a;
  if (a == 0 && b == 0)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

template <class F>
F nan_aware_max(F a, F b) {
  if (std::isnan(a))
    return b;
  if (std::isnan(b))
    return a;
  if (a == 0 && b == 0)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

template <class I, class F>
I saturate(F x) {
  if (std::isnan(x))
    return 0;
  F t = std::trunc(x);
  if (t <= static_cast<F>(std::numeric_limits<I>::min()))
    return std::numeric_limits<I>::min();
  if (t >= static_cast<F>(std::numeric_limits<I>::max()))
    return std::numeric_limits<I>::max();
  return static_cast<I>(t);
}

template <class F>
bool compare(Mod m, F a, F b) {
  bool un = std::isnan(a) || std::isnan(b);
  switch (m) {
    case kEq:
      return !un && a == b;
    case kNe:
      return !un && a != b;
    case kLt:
      return !un && a < b;
    case kLe:
      return !un && a <= b;
    case kGt:
      return !un && a > b;
    case kGe:
      return !un && a >= b;
    case kEqu:
      return un || a == b;
    case kNeu:
      return un || a != b;
    case kLtu:
      return un || a < b;
    case kLeu:
      return un || a <= b;
    case kGtu:
      return un || a > b;
    case kGeu:
      return un || a >= b;
    case kNum:
      return !un;
    case kNan:
      return un;
    default:
      throw PtxError("bad float comparison");
  }
}

template <class I>
bool compare_int(Mod m, I a, I b) {
  switch (m) {
    case kEq:
      return a == b;
    case kNe:
      return a != b;
    case kLt:
      return a < b;
    case kLe:
      return a <= b;
    case kGt:
      return a > b;
    case kGe:
      return a >= b;
    default:
      throw PtxError("bad integer comparison");
  }
}

// The high 64 bits of a 64 x 64-bit product (portable: no __int128 under -Wpedantic).
uint64_t mul_hi(uint64_t a, uint64_t b) {
  uint64_t al = a & 0xFFFFFFFFu, ah = a >> 32, bl = b & 0xFFFFFFFFu, bh = b >> 32;
  uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
  uint64_t mid = (ll >> 32) + (lh & 0xFFFFFFFFu) + (hl & 0xFFFFFFFFu);
  return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

struct Thread {
  std::vector<uint64_t> r;
  uint32_t pc = 0;
  uint32_t tid = 0;
  bool carry = false;

  enum State : uint8_t { Running, Waiting, Done } state = Running;
};

class Machine {
 public:
  Machine(PtxProgram& prog, const Entry& e, std::span<const uint64_t> params,
          const std::map<uint64_t, uint64_t>& allowed, unsigned grid, unsigned block,
          uint64_t budget, unsigned quantum)
      : prog_(prog),
        e_(e),
        params_(params),
        allowed_(allowed),
        grid_(grid),
        block_(block),
        budget_(budget),
        quantum_(quantum) {}

  uint64_t run();

 private:
  [[noreturn]] void fail(const Thread& t, const std::string& what) const {
    const Instr& in = e_.code[std::min<size_t>(t.pc, e_.code.size() - 1)];
    throw PtxError(e_.name + " block " + std::to_string(cta_) + " thread " + std::to_string(t.tid) +
                   " (line " + std::to_string(in.line) + "): " + what);
  }

  uint64_t special(const Thread& t, uint64_t id) const {
    switch (static_cast<Special>(id)) {
      case Special::TidX:
        return t.tid;
      case Special::NtidX:
        return block_;
      case Special::CtaidX:
        return cta_;
      case Special::NctaidX:
        return grid_;
      case Special::LaneId:
        return t.tid % 32;
      case Special::LaneMaskLt:
        return (uint64_t{1} << (t.tid % 32)) - 1;
    }
    return 0;
  }

  uint64_t read(const Thread& t, const Operand& o) const {
    switch (o.kind) {
      case Operand::Reg: {
        uint64_t v = t.r[o.reg];
        return o.negate ? !v : v;
      }
      case Operand::Imm:
        return o.imm;
      case Operand::Special:
        return special(t, o.imm);
      case Operand::Symbol: {
        const Symbol& s = prog_.symbols[o.sym];
        return s.space == Space::Shared ? s.shared_offset
                                        : reinterpret_cast<uint64_t>(s.data.data());
      }
      default:
        fail(t, "operand is not a value");
    }
  }

  // The effective address of an Addr operand.
  uint64_t address(const Thread& t, const Operand& o) const {
    uint64_t base;
    if (o.reg >= 0)
      base = t.r[o.reg];
    else if (o.sym >= 0)
      base = read(t, Operand{Operand::Symbol, false, -1, o.sym, -1, 0});
    else
      fail(t, "address without a base");
    return base + o.imm;
  }

  void check_global(const Thread& t, uint64_t addr, unsigned bytes) const {
    auto it = allowed_.upper_bound(addr);
    if (it != allowed_.begin()) {
      --it;
      if (addr >= it->first && addr + bytes <= it->second)
        return;
    }
    for (const Symbol& s : prog_.symbols) {
      auto b = reinterpret_cast<uint64_t>(s.data.data());
      if (s.space == Space::Global && addr >= b && addr + bytes <= b + s.data.size())
        return;
    }
    std::ostringstream os;
    os << "global access of " << bytes << " bytes at 0x" << std::hex << addr
       << " outside every allowed buffer";
    fail(t, os.str());
  }

  uint8_t* memory(const Thread& t, Space space, uint64_t addr, unsigned bytes) {
    if (space == Space::Shared) {
      if (addr + bytes > shared_.size())
        fail(t, "shared access out of range");
      return shared_.data() + addr;
    }
    if (space != Space::Global)
      fail(t, "memory access in an unsupported state space");
    check_global(t, addr, bytes);
    return reinterpret_cast<uint8_t*>(addr);
  }

  uint64_t load(const Thread& t, Space space, Ty ty, uint64_t addr) {
    unsigned bytes = width(ty) / 8;
    uint64_t v = 0;
    std::memcpy(&v, memory(t, space, addr, bytes), bytes);
    return is_signed(ty) ? static_cast<uint64_t>(sext(ty, v)) : v;
  }

  void store(const Thread& t, Space space, Ty ty, uint64_t addr, uint64_t v) {
    unsigned bytes = width(ty) / 8;
    std::memcpy(memory(t, space, addr, bytes), &v, bytes);
  }

  void write(Thread& t, const Operand& d, Ty ty, uint64_t v) {
    if (d.kind != Operand::Reg)
      fail(t, "destination is not a register");
    t.r[d.reg] = ty == Ty::Pred ? (v != 0) : mask(ty, v);
  }

  bool is_collective(const Instr& in) const {
    return in.op == Op::BarSync || in.op == Op::Shfl || in.op == Op::Vote;
  }

  void step(Thread& t);
  uint64_t cvt(const Thread& t, const Instr& in, uint64_t a);
  void collective(std::vector<Thread>& threads, unsigned first, unsigned count);

  PtxProgram& prog_;
  const Entry& e_;
  std::span<const uint64_t> params_;
  const std::map<uint64_t, uint64_t>& allowed_;
  unsigned grid_, block_;
  uint64_t budget_;
  unsigned quantum_;  // instructions per turn (0: a turn lasts up to a collective instruction)
  uint64_t executed_ = 0;
  unsigned cta_ = 0;
  std::vector<uint8_t> shared_;
};

uint64_t Machine::cvt(const Thread& t, const Instr& in, uint64_t a) {
  Ty d = in.t, s = in.t2;
  if (!is_fp(d) && !is_fp(s)) {  // integer -> integer
    uint64_t v = is_signed(s) ? static_cast<uint64_t>(sext(s, a)) : mask(s, a);
    return mask(d, v);
  }
  if (is_fp(s) && is_fp(d)) {
    if (s == Ty::F32 && d == Ty::F64)
      return bits(static_cast<double>(f32(a)));
    if (s == Ty::F64 && d == Ty::F32) {
      if (in.mod != kRn)
        fail(t, "cvt.f32.f64 without .rn");
      return bits(static_cast<float>(f64(a)));
    }
    auto round = [&](auto x) {
      switch (in.mod) {
        case kRni:
          return std::nearbyint(x);
        case kRzi:
          return std::trunc(x);
        case kRmi:
          return std::floor(x);
        case kRpi:
          return std::ceil(x);
        default:
          fail(t, "cvt between equal float types without an integer rounding");
      }
    };
    return s == Ty::F32 ? bits(round(f32(a))) : bits(round(f64(a)));
  }
  if (is_fp(d)) {  // integer -> float
    if (in.mod != kRn)
      fail(t, "cvt int -> float without .rn");
    int64_t sv = sext(s, a);
    uint64_t uv = mask(s, a);
    if (d == Ty::F32)
      return is_signed(s) ? bits(static_cast<float>(sv)) : bits(static_cast<float>(uv));
    return is_signed(s) ? bits(static_cast<double>(sv)) : bits(static_cast<double>(uv));
  }
  // float -> integer: saturating, NaN -> 0
  if (in.mod != kRzi)
    fail(t, "cvt float -> int other than .rzi");
  auto conv = [&](auto x) -> uint64_t {
    switch (d) {
      case Ty::S32:
        return static_cast<uint32_t>(saturate<int32_t>(x));
      case Ty::U32:
        return saturate<uint32_t>(x);
      case Ty::S64:
        return static_cast<uint64_t>(saturate<int64_t>(x));
      case Ty::U64:
        return saturate<uint64_t>(x);
      default:
        fail(t, "cvt to an unsupported integer type");
    }
  };
  return s == Ty::F32 ? conv(f32(a)) : conv(f64(a));
}

void Machine::step(Thread& t) {
  const Instr& in = e_.code[t.pc];
  if (in.guard >= 0) {
    bool g = t.r[in.guard] != 0;
    if (g == in.guard_neg) {
      ++t.pc;
      return;
    }
  }
  Ty ty = in.t;
  auto A = [&] { return read(t, in.o[1]); };
  auto B = [&] { return read(t, in.o[2]); };
  auto C = [&] { return read(t, in.o[3]); };
  bool fp = is_fp(ty), f64t = ty == Ty::F64, sg = is_signed(ty);
  unsigned w = width(ty);
  auto next = [&] { ++t.pc; };
  switch (in.op) {
    case Op::Mov:
      write(t, in.o[0], ty, A());
      return next();
    case Op::Ld: {
      if (in.space == Space::Param) {
        if (in.o[1].param < 0)
          fail(t, "ld.param of something else than a parameter");
        write(t, in.o[0], Ty::U64, params_[in.o[1].param]);
        return next();
      }
      // Narrow loads fill a 32-bit register (zero- or sign-extended by load()).
      uint64_t v = load(t, in.space, ty, address(t, in.o[1]));
      if (in.o[0].kind != Operand::Reg)
        fail(t, "ld into something else than a register");
      t.r[in.o[0].reg] = w == 64 ? v : (v & 0xFFFFFFFFu);
      return next();
    }
    case Op::St:
      store(t, in.space, ty, address(t, in.o[0]), A());
      return next();
    case Op::Cvta:
      write(t, in.o[0], Ty::U64, A());
      return next();
    case Op::Cvt:
      write(t, in.o[0], ty, cvt(t, in, A()));
      return next();
    case Op::Add:
    case Op::Sub:
    case Op::AddC: {
      uint64_t a = A(), b = B(), r;
      if (fp) {
        if (in.mod != kRn)
          fail(t, "float add/sub without .rn");
        bool sub = in.op == Op::Sub;
        r = f64t ? bits(sub ? f64(a) - f64(b) : f64(a) + f64(b))
                 : bits(sub ? f32(a) - f32(b) : f32(a) + f32(b));
      } else if (in.op == Op::Sub) {
        r = a - b;
      } else {
        uint64_t cin = in.op == Op::AddC && t.carry ? 1 : 0;
        uint64_t ma = mask(ty, a), mb = mask(ty, b);
        r = ma + mb + cin;
        if (in.cc) {
          if (w == 64)
            t.carry = r < ma || (cin && r == ma);
          else
            t.carry = (r >> w) != 0;
        }
      }
      write(t, in.o[0], ty, r);
      return next();
    }
    case Op::Mul: {
      uint64_t a = A(), b = B(), r;
      if (fp) {
        if (in.mod != kRn)
          fail(t, "float mul without .rn");
        r = f64t ? bits(f64(a) * f64(b)) : bits(f32(a) * f32(b));
        write(t, in.o[0], ty, r);
      } else if (in.mod == kWide) {
        if (w != 32)
          fail(t, "mul.wide of 64-bit values");
        r = sg ? static_cast<uint64_t>(sext(ty, a) * sext(ty, b)) : mask(ty, a) * mask(ty, b);
        write(t, in.o[0], sg ? Ty::S64 : Ty::U64, r);
      } else if (in.mod == kHi) {
        if (w != 64 || sg)
          fail(t, "mul.hi other than u64");
        r = mul_hi(a, b);
        write(t, in.o[0], ty, r);
      } else if (in.mod == kLo) {
        write(t, in.o[0], ty, a * b);
      } else {
        fail(t, "integer mul without .lo/.hi/.wide");
      }
      return next();
    }
    case Op::Mad: {
      uint64_t a = A(), b = B(), c = C();
      if (in.mod == kWide) {
        if (w != 32 || sg)
          fail(t, "mad.wide other than u32");
        write(t, in.o[0], Ty::U64, mask(ty, a) * mask(ty, b) + c);
      } else if (in.mod == kLo && !fp) {
        write(t, in.o[0], ty, a * b + c);
      } else {
        fail(t, "unsupported mad");
      }
      return next();
    }
    case Op::Fma: {
      if (in.mod != kRn)
        fail(t, "fma without .rn");
      uint64_t a = A(), b = B(), c = C();
      write(t, in.o[0], ty,
            f64t ? bits(std::fma(f64(a), f64(b), f64(c))) : bits(std::fma(f32(a), f32(b), f32(c))));
      return next();
    }
    case Op::Div:
    case Op::Rem: {
      uint64_t a = A(), b = B(), r;
      if (fp) {
        if (in.mod != kRn || in.op == Op::Rem)
          fail(t, "float div without .rn");
        r = f64t ? bits(f64(a) / f64(b)) : bits(f32(a) / f32(b));
      } else {
        if (mask(ty, b) == 0)
          fail(t, "integer division by zero (the generator must prevent it)");
        if (sg) {
          int64_t x = sext(ty, a), y = sext(ty, b);
          int64_t mn = w == 64 ? std::numeric_limits<int64_t>::min() : int64_t{INT32_MIN};
          if (x == mn && y == -1)
            fail(t, "INT_MIN / -1 (the generator must prevent it)");
          r = static_cast<uint64_t>(in.op == Op::Div ? x / y : x % y);
        } else {
          uint64_t x = mask(ty, a), y = mask(ty, b);
          r = in.op == Op::Div ? x / y : x % y;
        }
      }
      write(t, in.o[0], ty, r);
      return next();
    }
    case Op::Min:
    case Op::Max: {
      uint64_t a = A(), b = B(), r;
      bool mn = in.op == Op::Min;
      if (fp) {
        r = f64t ? bits(mn ? nan_aware_min(f64(a), f64(b)) : nan_aware_max(f64(a), f64(b)))
                 : bits(mn ? nan_aware_min(f32(a), f32(b)) : nan_aware_max(f32(a), f32(b)));
      } else if (sg) {
        int64_t x = sext(ty, a), y = sext(ty, b);
        r = static_cast<uint64_t>(mn ? std::min(x, y) : std::max(x, y));
      } else {
        uint64_t x = mask(ty, a), y = mask(ty, b);
        r = mn ? std::min(x, y) : std::max(x, y);
      }
      write(t, in.o[0], ty, r);
      return next();
    }
    case Op::Neg:
    case Op::Abs: {
      uint64_t a = A(), r;
      if (fp) {
        r = in.op == Op::Neg ? (f64t ? bits(-f64(a)) : bits(-f32(a)))
                             : (f64t ? bits(std::fabs(f64(a))) : bits(std::fabs(f32(a))));
      } else if (in.op == Op::Neg) {
        r = uint64_t{0} - a;
      } else {
        int64_t x = sext(ty, a);
        r = x < 0 ? uint64_t{0} - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
      }
      write(t, in.o[0], ty, r);
      return next();
    }
    case Op::Not:
      write(t, in.o[0], ty, ty == Ty::Pred ? !A() : ~A());
      return next();
    case Op::And:
      write(t, in.o[0], ty, A() & B());
      return next();
    case Op::Or:
      write(t, in.o[0], ty, A() | B());
      return next();
    case Op::Xor:
      write(t, in.o[0], ty, A() ^ B());
      return next();
    case Op::Shl:
    case Op::Shr: {
      uint64_t a = mask(ty, A());
      uint64_t n = mask(Ty::U32, B());
      uint64_t r;
      if (in.op == Op::Shl) {
        r = n >= w ? 0 : a << n;
      } else if (sg) {
        int64_t x = sext(ty, a);
        r = static_cast<uint64_t>(n >= w ? (x < 0 ? -1 : 0) : x >> n);
      } else {
        r = n >= w ? 0 : a >> n;
      }
      write(t, in.o[0], ty, r);
      return next();
    }
    case Op::Clz: {
      uint64_t a = mask(ty, A());
      uint64_t r = w == 64 ? std::countl_zero(a) : std::countl_zero(static_cast<uint32_t>(a));
      write(t, in.o[0], Ty::U32, r);
      return next();
    }
    case Op::Popc:
      write(t, in.o[0], Ty::U32, std::popcount(mask(ty, A())));
      return next();
    case Op::Sqrt:
      if (in.mod != kRn)
        fail(t, "sqrt without .rn");
      write(t, in.o[0], ty, f64t ? bits(std::sqrt(f64(A()))) : bits(std::sqrt(f32(A()))));
      return next();
    case Op::Setp: {
      uint64_t a = A(), b = B();
      bool r;
      if (fp)
        r = f64t ? compare(in.mod, f64(a), f64(b)) : compare(in.mod, f32(a), f32(b));
      else if (sg)
        r = compare_int(in.mod, sext(ty, a), sext(ty, b));
      else
        r = compare_int(in.mod, mask(ty, a), mask(ty, b));
      write(t, in.o[0], Ty::Pred, r);
      return next();
    }
    case Op::Selp:
      write(t, in.o[0], ty, C() ? A() : B());
      return next();
    case Op::Bra:
      t.pc = static_cast<uint32_t>(in.o[0].imm);
      return;
    case Op::BrxIdx: {
      // PTX leaves an index past the table undefined: the generator guards it, so fail.
      const std::vector<uint32_t>& table = e_.tables[in.o[1].imm];
      uint64_t i = read(t, in.o[0]) & 0xFFFFFFFFu;
      if (i >= table.size())
        fail(t, "brx.idx index " + std::to_string(i) + " past its table of " +
                    std::to_string(table.size()));
      t.pc = table[i];
      return;
    }
    case Op::Ret:
      t.state = Thread::Done;
      return;
    case Op::Red:
    case Op::Atom: {
      // One thread runs at a time, so the read-modify-write is atomic by construction.
      const Operand& ao = in.op == Op::Red ? in.o[0] : in.o[1];
      uint64_t v = read(t, in.op == Op::Red ? in.o[1] : in.o[2]);
      uint64_t addr = address(t, ao);
      uint64_t old = load(t, in.space, ty, addr);
      uint64_t r = 0;
      switch (in.atom) {
        case AtomOp::Add:
          r = fp ? (f64t ? bits(f64(old) + f64(v)) : bits(f32(old) + f32(v))) : old + v;
          break;
        case AtomOp::And:
        case AtomOp::Or:
        case AtomOp::Xor:
          r = in.atom == AtomOp::And ? old & v : in.atom == AtomOp::Or ? old | v : old ^ v;
          break;
        case AtomOp::Min:
        case AtomOp::Max: {
          bool less = sg ? sext(ty, v) < sext(ty, old) : mask(ty, v) < mask(ty, old);
          bool greater = sg ? sext(ty, v) > sext(ty, old) : mask(ty, v) > mask(ty, old);
          r = (in.atom == AtomOp::Min ? less : greater) ? v : old;
          break;
        }
        case AtomOp::Exch:
          r = v;
          break;
        case AtomOp::Cas:  // atom.cas d, [a], compare, new
          r = mask(ty, old) == mask(ty, v) ? read(t, in.o[3]) : old;
          break;
      }
      store(t, in.space, ty, addr, mask(ty, r));
      if (in.op == Op::Atom)
        write(t, in.o[0], ty, old);
      return next();
    }
    case Op::Membar:
      return next();
    case Op::BarSync:
    case Op::Shfl:
    case Op::Vote:
      t.state = Thread::Waiting;
      return;
  }
  fail(t, "unhandled instruction");
}

// Runs a warp's shuffle or ballot, or releases a barrier, once everyone needed is waiting.
void Machine::collective(std::vector<Thread>& threads, unsigned first, unsigned count) {
  const Instr& in = e_.code[threads[first].pc];
  for (unsigned k = first; k < first + count; ++k)
    if (threads[k].pc != threads[first].pc)
      fail(threads[k], "lanes of a warp wait at different collective instructions");
  if (in.op == Op::Vote) {
    uint64_t ballot = 0;
    for (unsigned k = first; k < first + count; ++k)
      if (read(threads[k], in.o[1]))
        ballot |= uint64_t{1} << (threads[k].tid % 32);
    for (unsigned k = first; k < first + count; ++k) {
      write(threads[k], in.o[0], Ty::B32, ballot);
      ++threads[k].pc;
      threads[k].state = Thread::Running;
    }
    return;
  }
  // shfl.sync.mode.b32 d, a, b, c, membermask
  std::vector<uint64_t> src(32, 0);
  std::vector<bool> live(32, false);
  for (unsigned k = first; k < first + count; ++k) {
    src[threads[k].tid % 32] = mask(Ty::B32, read(threads[k], in.o[1]));
    live[threads[k].tid % 32] = true;
  }
  for (unsigned k = first; k < first + count; ++k) {
    Thread& t = threads[k];
    unsigned lane = t.tid % 32;
    uint64_t b = mask(Ty::U32, read(t, in.o[2]));
    uint64_t c = mask(Ty::U32, read(t, in.o[3]));
    unsigned max_lane = c & 31, seg = (c >> 8) & 31;
    unsigned min_lane = lane & seg;
    max_lane = min_lane | (max_lane & ~seg);
    int j;
    bool in_range;
    switch (in.mod) {
      case kUp:
        j = static_cast<int>(lane) - static_cast<int>(b);
        in_range = j >= static_cast<int>(min_lane);
        break;
      case kDown:
        j = static_cast<int>(lane + b);
        in_range = j <= static_cast<int>(max_lane);
        break;
      case kBfly:
        j = static_cast<int>(lane ^ b);
        in_range = j <= static_cast<int>(max_lane);
        break;
      case kIdx:
        j = static_cast<int>(min_lane | (b & ~seg & 31));
        in_range = j <= static_cast<int>(max_lane);
        break;
      default:
        fail(t, "unknown shuffle mode");
    }
    if (in_range && !live[static_cast<unsigned>(j)])
      fail(t, "shuffle reads an exited lane");
    write(t, in.o[0], Ty::B32, in_range ? src[static_cast<unsigned>(j)] : src[lane]);
  }
  for (unsigned k = first; k < first + count; ++k) {
    ++threads[k].pc;
    threads[k].state = Thread::Running;
  }
}

uint64_t Machine::run() {
  for (cta_ = 0; cta_ < grid_; ++cta_) {
    shared_.assign(e_.shared_bytes, 0xCD);  // uninitialised shared memory is garbage
    std::vector<Thread> threads(block_);
    for (unsigned k = 0; k < block_; ++k) {
      threads[k].r.assign(e_.n_regs, 0);
      threads[k].tid = k;
    }
    for (;;) {
      // Every thread up to its next collective instruction, in turns.
      for (bool running = true; running;) {
        running = false;
        for (Thread& t : threads) {
          for (unsigned k = 0; t.state == Thread::Running && (quantum_ == 0 || k < quantum_); ++k) {
            if (t.pc >= e_.code.size())
              fail(t, "ran off the end of the entry");
            if (++executed_ > budget_)
              fail(t, "instruction budget exhausted (an endless loop?)");
            step(t);
          }
          running = running || t.state == Thread::Running;
        }
      }
      bool all_done = true, progress = false;
      for (unsigned w0 = 0; w0 < block_; w0 += 32) {
        unsigned n = std::min(32u, block_ - w0), live = 0, waiting = 0;
        for (unsigned k = w0; k < w0 + n; ++k) {
          live += threads[k].state != Thread::Done;
          waiting +=
              threads[k].state == Thread::Waiting && e_.code[threads[k].pc].op != Op::BarSync;
        }
        all_done = all_done && live == 0;
        if (live && waiting == live) {
          // every live lane is at a warp collective: they must all be live
          if (live != n)
            fail(threads[w0], "warp collective with exited lanes");
          collective(threads, w0, n);
          progress = true;
        }
      }
      if (all_done)
        break;
      if (progress)
        continue;
      bool barrier = true;
      for (const Thread& t : threads)
        if (t.state != Thread::Done &&
            !(t.state == Thread::Waiting && e_.code[t.pc].op == Op::BarSync))
          barrier = false;
      if (!barrier)
        fail(threads[0], "deadlock: threads wait at different collective instructions");
      for (Thread& t : threads)
        if (t.state == Thread::Waiting) {
          ++t.pc;
          t.state = Thread::Running;
        }
    }
  }
  return executed_;
}

}  // namespace

PtxModule::PtxModule(const std::string& text) : program_(std::make_unique<PtxProgram>()) {
  Parser(*program_).parse(text);
}

PtxModule::~PtxModule() = default;
PtxModule::PtxModule(PtxModule&&) noexcept = default;

void PtxModule::allow(const void* p, size_t bytes) {
  auto b = reinterpret_cast<uint64_t>(p);
  allowed_[b] = std::max(allowed_[b], b + bytes);
}

void PtxModule::clear_allowed() {
  allowed_.clear();
}

size_t PtxModule::param_count(const std::string& entry) const {
  for (const Entry& e : program_->entries)
    if (e.name == entry)
      return e.params.size();
  throw PtxError("no entry " + entry);
}

void PtxModule::launch(const std::string& entry, unsigned grid, unsigned block,
                       std::span<const uint64_t> params, uint64_t max_instructions) {
  for (const Entry& e : program_->entries) {
    if (e.name != entry)
      continue;
    if (params.size() != e.params.size())
      throw PtxError(entry + " takes " + std::to_string(e.params.size()) + " parameters, got " +
                     std::to_string(params.size()));
    Machine m(*program_, e, params, allowed_, grid, block, max_instructions, quantum_);
    executed_ += m.run();
    return;
  }
  throw PtxError("no entry " + entry);
}

}  // namespace ffcuda
