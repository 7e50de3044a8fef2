// Regions as PTX branches (see ptx_regions.h). The shapes, for one element:
//
//   loop:   mov var, init ...; [mov.u64 trips, 0]
//           head: <condition>; @!cond bra exit; [setp.ge.u64 p, trips, limit; @p bra exit]
//           <body>; mov var, yield ... (through a temporary where a yield is a carried value
//           written before it); [add.u64 trips, trips, 1]; bra head
//           exit: (the Results are the carried registers)
//   if:     @!mask bra else; <then>; mov res, yield ...; bra done
//           else: <else>; mov res, yield ...; done:
//   call:   setp.ge.u32 p, index, N; @p bra none; then a compare chain (N <= 4) or
//           `brx.idx index, table` to the targets; each target: <part>; mov res, yield ...;
//           bra done; none: mov res, 0 ...; done:
//
// As in the LLVM backend, a loop's condition is evaluated once more than its body runs (the
// evaluation that ends it), also when the iteration limit ends it.
#include "backend/cuda/ptx_regions.h"

#include <vector>

#include "backend/ir/ir_analysis.h"
#include "common/assert.h"

namespace ff::cuda_backend {
namespace {

// Calls with at most this many targets dispatch through compares; more use brx.idx.
constexpr uint64_t kMaxCompareChain = 4;

struct Reg {
  RegClass cls;
  std::string name;
};

const char* zero(RegClass c) {
  switch (c) {
    case RegClass::F32:
      return "0f00000000";
    case RegClass::F64:
      return "0d0000000000000000";
    default:
      return "0";
  }
}

class RegionEmitter {
 public:
  RegionEmitter(PtxWriter& w, const KernelIR& ir, PtxRegionHost& host)
      : w_(w), ir_(ir), host_(host) {}

  void region(size_t& k) {
    switch (ir_.instrs[k].op) {
      case IrOp::LoopBegin:
        loop(k);
        break;
      case IrOp::IfBegin:
        branch(k);
        break;
      default:
        call(k);
        break;
    }
  }

 private:
  // Emits the instructions from k up to the end of the current part (a LoopCond, IfElse,
  // CallCase or EndRegion, where k is left); the part's Yields go to `yields` (their
  // instruction indices).
  void part(size_t& k, std::vector<uint32_t>& yields) {
    for (;;) {
      const IrInstr& in = ir_.instrs[k];
      switch (op_facts(in.op).region) {
        case RegionRole::None:
          host_.emit(static_cast<uint32_t>(k));
          ++k;
          break;
        case RegionRole::Open:
          region(k);
          break;
        case RegionRole::Yield:
          yields.push_back(static_cast<uint32_t>(k));
          ++k;
          break;
        default:  // Cond, Part, Close (Var and Result are consumed by their regions)
          return;
      }
    }
  }

  RegClass cls(uint32_t v) const { return reg_class(ir_.instrs[v].type); }

  void mov(RegClass c, const std::string& to, const std::string& from) {
    w_.op("mov.{} {}, {}", mov_type(c), to, from);
  }

  Reg fresh(uint32_t v) {
    RegClass c = cls(v);
    return {c, w_.reg(c)};
  }

  // Fresh registers for the values of `yields` (the first part of a branch or call).
  std::vector<Reg> result_registers(const std::vector<uint32_t>& yields) {
    std::vector<Reg> r;
    for (uint32_t y : yields)
      r.push_back(fresh(y));
    return r;
  }

  // Writes the part's yields into the region's result registers. A yield never reads a result
  // register of its own region (those are defined only after it), so no temporaries.
  void write_results(const std::vector<uint32_t>& yields, const std::vector<Reg>& res) {
    FF_ASSERT(yields.size() == res.size(), "a part yields {} values, not {}", yields.size(),
              res.size());
    for (size_t j = 0; j < yields.size(); ++j)
      mov(res[j].cls, res[j].name, host_.value(ir_.instrs[yields[j]].a));
  }

  // The Results after an EndRegion (k) take the registers `res`, in order.
  void define_results(size_t& k, const std::vector<Reg>& res) {
    for (const Reg& r : res) {
      FF_ASSERT(ir_.instrs[k].op == IrOp::Result, "instruction {} should be a Result", k);
      host_.define(static_cast<uint32_t>(k), r.name);
      ++k;
    }
  }

  void loop(size_t& k) {
    const uint64_t limit = ir_.instrs[k].imm;
    ++k;
    std::vector<Reg> vars;
    for (; ir_.instrs[k].op == IrOp::LoopVar; ++k) {
      // A fresh register: the initial value's own may be read again after the loop (or be a
      // hoisted uniform).
      Reg r = fresh(static_cast<uint32_t>(k));
      mov(r.cls, r.name, host_.value(ir_.instrs[k].a));
      host_.define(static_cast<uint32_t>(k), r.name);
      vars.push_back(r);
    }
    std::string trips;
    if (limit != kNoIterationLimit) {
      trips = w_.reg(RegClass::B64);
      w_.op("mov.u64 {}, 0", trips);
    }
    std::string head = w_.label(), exit = w_.label();
    w_.place(head);
    std::vector<uint32_t> yields;
    part(k, yields);  // the condition, up to LoopCond
    w_.op("@!{} bra {}", host_.value(ir_.instrs[k].a), exit);
    ++k;
    if (!trips.empty()) {
      std::string done = w_.reg(RegClass::Pred);
      w_.op("setp.ge.u64 {}, {}, 0x{:016X}", done, trips, limit);
      w_.op("@{} bra {}", done, exit);
    }
    part(k, yields);  // the body, up to EndRegion
    ++k;
    FF_ASSERT(yields.size() == vars.size(), "loop with {} carried values has {} yields",
              vars.size(), yields.size());
    // The carried registers are written in order; a yield that is an earlier carried value
    // (x, y = y, x) is copied to a temporary first, before any of them changes.
    std::vector<std::string> next;
    for (size_t j = 0; j < vars.size(); ++j) {
      std::string y = host_.value(ir_.instrs[yields[j]].a);
      bool clobbered = false;
      for (size_t i = 0; i < j; ++i)
        clobbered = clobbered || y == vars[i].name;
      if (clobbered) {
        std::string tmp = w_.reg(vars[j].cls);
        mov(vars[j].cls, tmp, y);
        y = tmp;
      }
      next.push_back(y);
    }
    for (size_t j = 0; j < vars.size(); ++j)
      if (next[j] != vars[j].name)
        mov(vars[j].cls, vars[j].name, next[j]);
    if (!trips.empty())
      w_.op("add.u64 {}, {}, 1", trips, trips);
    w_.op("bra {}", head);
    w_.place(exit);
    define_results(k, vars);  // the carried values when the loop ended
  }

  void branch(size_t& k) {
    std::string mask = host_.value(ir_.instrs[k].a);
    ++k;
    std::string other = w_.label(), done = w_.label();
    w_.op("@!{} bra {}", mask, other);
    std::vector<uint32_t> yields;
    part(k, yields);  // up to IfElse
    ++k;
    std::vector<Reg> res = result_registers(yields);
    write_results(yields, res);
    w_.op("bra {}", done);
    w_.place(other);
    yields.clear();
    part(k, yields);  // up to EndRegion
    ++k;
    write_results(yields, res);
    w_.place(done);
    define_results(k, res);
  }

  void call(size_t& k) {
    std::string index = host_.value(ir_.instrs[k].a);
    const uint64_t n = ir_.instrs[k].imm;
    ++k;
    std::vector<std::string> targets;
    for (uint64_t t = 0; t < n; ++t)
      targets.push_back(w_.label());
    std::string none = w_.label(), done = w_.label(), p = w_.reg(RegClass::Pred);
    // Out of range: no target, zero results.
    w_.op("setp.ge.u32 {}, {}, {}", p, index, n);
    w_.op("@{} bra {}", p, none);
    if (n <= kMaxCompareChain) {
      for (uint64_t t = 1; t < n; ++t) {
        std::string is_t = w_.reg(RegClass::Pred);
        w_.op("setp.eq.u32 {}, {}, {}", is_t, index, t);
        w_.op("@{} bra {}", is_t, targets[t]);
      }
      // Target 0 follows.
    } else {
      std::string table = w_.label(), list;
      for (const std::string& t : targets)
        list += (list.empty() ? "" : ", ") + t;
      w_.raw("\t" + table + ": .branchtargets " + list + ";\n");
      w_.op("brx.idx {}, {}", index, table);
    }
    std::vector<Reg> res;
    for (uint64_t t = 0; t < n; ++t) {
      w_.place(targets[t]);
      std::vector<uint32_t> yields;
      part(k, yields);  // up to CallCase or EndRegion
      ++k;
      if (t == 0)
        res = result_registers(yields);
      write_results(yields, res);
      w_.op("bra {}", done);
    }
    w_.place(none);
    for (const Reg& r : res)
      w_.op("mov.{} {}, {}", mov_type(r.cls), r.name, zero(r.cls));
    w_.place(done);
    define_results(k, res);
  }

  PtxWriter& w_;
  const KernelIR& ir_;
  PtxRegionHost& host_;
};

}  // namespace

void emit_ptx_region(PtxWriter& w, const KernelIR& ir, size_t& k, PtxRegionHost& host) {
  RegionEmitter(w, ir, host).region(k);
}

}  // namespace ff::cuda_backend
