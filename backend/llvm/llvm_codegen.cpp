// Neutral kernel IR -> LLVM IR. Emits explicit vector code directly (no optimisation passes
// are needed for good machine code), so compiling a kernel costs little more than codegen.
#include "backend/llvm/llvm_codegen.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <bit>
#include <cmath>
#include <optional>
#include <vector>

#include "backend/ir/ir_analysis.h"
#include "backend/llvm/accumulate_launch.h"
#include "freezeframe/errors.h"

namespace ff::llvm_backend {
namespace {

using llvm::Type;
using llvm::Value;
namespace Intr = llvm::Intrinsic;

class KernelEmitter {
 public:
  KernelEmitter(const KernelIR& ir, const CodegenTarget& target, LoopStyle style,
                llvm::Module& module, unsigned interleave)
      : ir_(ir),
        target_(target),
        style_(style),
        ctx_(module.getContext()),
        module_(module),
        b_(ctx_),
        w_(style == LoopStyle::Scalar ? 1 : target.lanes),
        // Interleaving emits instruction k of every copy before k + 1 of any, which control
        // flow cannot follow: kernels with regions run one vector at a time.
        interleave_(style == LoopStyle::VectorSplitTail && !has_regions(ir) ? interleave : 1) {}

  void emit(const std::string& name);

 private:
  // Types: Bool is i1 in registers and i8 in memory; values are <w x T> (T when w == 1).
  Type* elem_ty(ScalarType t) {
    switch (t) {
      case ScalarType::Bool:
        return b_.getInt1Ty();
      case ScalarType::Int32:
      case ScalarType::UInt32:
        return b_.getInt32Ty();
      case ScalarType::Int64:
      case ScalarType::UInt64:
        return b_.getInt64Ty();
      case ScalarType::Float32:
        return b_.getFloatTy();
      case ScalarType::Float64:
        return b_.getDoubleTy();
    }
    return nullptr;
  }

  Type* mem_ty(ScalarType t) { return t == ScalarType::Bool ? b_.getInt8Ty() : elem_ty(t); }

  Type* vec(Type* t) { return w_ > 1 ? llvm::FixedVectorType::get(t, w_) : t; }

  Type* val_ty(ScalarType t) { return vec(elem_ty(t)); }

  llvm::Align align_of(ScalarType t) { return llvm::Align(size_of(t)); }

  Value* splat(Value* v) { return w_ > 1 ? b_.CreateVectorSplat(w_, v) : v; }

  Value* konst(ScalarType t, uint64_t bits);
  Value* from_bits(ScalarType t, Value* raw);

  Value* to_reg(ScalarType t, Value* mem) {
    return t == ScalarType::Bool
               ? b_.CreateICmpNE(mem, llvm::Constant::getNullValue(mem->getType()))
               : mem;
  }

  Value* to_mem(ScalarType t, Value* reg) {
    return t == ScalarType::Bool ? b_.CreateZExt(reg, vec(b_.getInt8Ty())) : reg;
  }

  Value* as_i64(uint32_t v);

  Value* and_mask(Value* m, Value* tail) { return tail ? b_.CreateAnd(m, tail) : m; }

  Value* lane_offsets();  // <0, 1, ..., w-1> as i64
  void hoist_uniforms();
  void hoist_division_magic(uint32_t divisor);
  void find_stencil_indices();
  void emit_body(Value* i, Value* tail);
  void emit_part(size_t& k, Value* i, Value* mask, std::vector<Value*>* yields);
  void emit_loop(size_t& k, Value* i, Value* mask);
  void emit_if(size_t& k, Value* i, Value* mask);
  void emit_call(size_t& k, Value* i, Value* mask);

  /// emit_part() of the part at k, past its end marker, then a branch to `next`; returns the
  /// block the part ended in (for the phis of `next`).
  llvm::BasicBlock* emit_part_into(size_t& k, Value* i, Value* mask, std::vector<Value*>& yields,
                                   llvm::BasicBlock* next) {
    emit_part(k, i, mask, &yields);
    ++k;
    llvm::BasicBlock* end = b_.GetInsertBlock();
    b_.CreateBr(next);
    return end;
  }

  Value* any_lane(Value* mask) { return w_ > 1 ? b_.CreateOrReduce(mask) : mask; }

  void emit_interleaved_body(Value* i);
  Value* emit_instr(const IrInstr& in, Value* i, Value* tail);
  Value* emit_index(ScalarType t, Value* i);
  Value* emit_gather(const IrInstr& in, Value* tail);
  Value* emit_masked_gather(const IrInstr& in, Value* tail);
  Value* emit_stencil_load(const IrInstr& in, Value* tail);
  Value* emit_uniform_div(const IrInstr& in);
  void emit_scatter(const IrInstr& in, Value* i, Value* tail);
  Value* emit_scatter_inc(const IrInstr& in, Value* tail);
  void emit_scatter_reduce_lanes(const IrInstr& in, Value* ptrs_base, Value* idx, Value* val,
                                 Value* mask, Value* lane0);
  uint32_t read_only_lane_param(uint32_t instr) const;
  void emit_lane_reduce(ReduceOp op, ScalarType t, Value* p, Value* v, bool atomic);
  Value* emit_combine(ReduceOp op, ScalarType t, Value* old, Value* v);
  Value* emit_lane_increment(Value* p);
  Value* spill(Value* v);
  // The lanes a gather or scatter touches: masked in and in range (`in_range` when the caller
  // has it, else idx < bound), with the FF_DEBUG range report.
  Value* emit_active_lanes(const IrInstr& in, Value* idx, Value* bound, Value* tail,
                           Value* in_range = nullptr);
  void emit_range_report(const IrInstr& in, Value* idx, Value* in_range, Value* mask);
  Value* emit_unary(const IrInstr& in);
  Value* emit_vector_math(const char* name, ScalarType t, llvm::ArrayRef<Value*> args);
  Value* emit_libm_lanes(const char* name, ScalarType t, llvm::ArrayRef<Value*> args);
  Value* emit_math(const char* name, ScalarType t, llvm::ArrayRef<Value*> args, Intr::ID fallback);
  Value* emit_binary(const IrInstr& in);
  Value* emit_compare(const IrInstr& in);
  Value* emit_cast(ScalarType from, ScalarType to, Value* v);
  Value* emit_saturating_cast(ScalarType from, ScalarType to, Value* v);

  llvm::BasicBlock* new_block(const char* name) {
    return llvm::BasicBlock::Create(ctx_, name, fn_);
  }

  /// `cond ? on_true() : on_false()` as two blocks joined by a phi, so that each side's code
  /// (a vector load, a gather of one kind or another) runs only when chosen.
  template <class T, class F>
  Value* branch_value(Value* cond, Type* ty, const char* names[2], T&& on_true, F&& on_false) {
    auto* yes = new_block(names[0]);
    auto* no = new_block(names[1]);
    auto* done = new_block("join");
    b_.CreateCondBr(cond, yes, no);
    b_.SetInsertPoint(yes);
    Value* a = on_true();
    llvm::BasicBlock* from_yes = b_.GetInsertBlock();
    b_.CreateBr(done);
    b_.SetInsertPoint(no);
    Value* c = on_false();
    llvm::BasicBlock* from_no = b_.GetInsertBlock();
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    llvm::PHINode* phi = b_.CreatePHI(ty, 2);
    phi->addIncoming(a, from_yes);
    phi->addIncoming(c, from_no);
    return phi;
  }

  const KernelIR& ir_;
  const CodegenTarget& target_;
  LoopStyle style_;
  llvm::LLVMContext& ctx_;
  llvm::Module& module_;
  llvm::IRBuilder<> b_;
  unsigned w_;
  llvm::Function* fn_ = nullptr;
  Value* end_ = nullptr;
  std::vector<Value*> raw_;         // per parameter: its 64-bit argument (nullptr if unused)
  std::vector<Value*> ptr_;         // per buffer parameter: the pointer
  std::vector<Value*> uniform_;     // per instruction: a value computed once before the loop
  std::vector<Value*> vals_;        // per instruction: its value in the body being emitted
  Value* exclusive_ = nullptr;      // accumulating kernels: i1, the launch's mode word says that
                                    // no other thread adds to the targets (accumulate_launch.h)
  Value* unaliased_ = nullptr;      // ... and that no written parameter shares another's buffer
  std::vector<uint8_t> read_only_;  // per parameter: no instruction writes its buffer
  unsigned interleave_;             // vector iterations per iteration of the interleaved loop

  // Unsigned 32-bit division by a uniform, non-constant divisor `d` (docs/kernel-ir.md):
  // n / d == (t + ((n - t) >> sh1)) >> sh2 with t = mulhi(n, m), per divisor instruction,
  // computed once before the loop; all nullptr where it does not apply.
  struct DivMagic {
    Value* d = nullptr;    // the divisor, 0 replaced by 1 (splat, i32)
    Value* m = nullptr;    // the multiplier (splat, i64, < 2^32)
    Value* sh1 = nullptr;  // min(l, 1), l = ceil(log2 d) (splat, i32)
    Value* sh2 = nullptr;  // l - sh1 (splat, i32)
  };

  std::vector<DivMagic> div_magic_;
  // Per instruction: an integer value that is "lane index + uniform" (Index, Add/Sub of such a
  // value and a uniform, integer casts of one to a type no wider), so that its lanes satisfy
  // v[l] == v[0] + l modulo 2^bits: a gather at it reads consecutive elements unless it wraps.
  std::vector<bool> lane_affine_;
};

Value* KernelEmitter::konst(ScalarType t, uint64_t bits) {
  Type* ty = val_ty(t);
  switch (t) {
    case ScalarType::Bool:
      return llvm::ConstantInt::get(ty, bits != 0 ? 1 : 0);
    case ScalarType::Int32:
    case ScalarType::UInt32:
      return llvm::ConstantInt::get(ty, bits & 0xFFFFFFFFu);
    case ScalarType::Int64:
    case ScalarType::UInt64:
      return llvm::ConstantInt::get(ty, bits);
    case ScalarType::Float32:
      return llvm::ConstantFP::get(
          ty, llvm::APFloat(llvm::APFloat::IEEEsingle(), llvm::APInt(32, bits & 0xFFFFFFFFu)));
    case ScalarType::Float64:
      return llvm::ConstantFP::get(
          ty, llvm::APFloat(llvm::APFloat::IEEEdouble(), llvm::APInt(64, bits)));
  }
  return nullptr;
}

// A scalar argument's 64-bit pattern -> one (unsplatted) value of type t.
Value* KernelEmitter::from_bits(ScalarType t, Value* raw) {
  switch (t) {
    case ScalarType::Bool:
      return b_.CreateICmpNE(raw, b_.getInt64(0));
    case ScalarType::Int32:
    case ScalarType::UInt32:
      return b_.CreateTrunc(raw, b_.getInt32Ty());
    case ScalarType::Int64:
    case ScalarType::UInt64:
      return raw;
    case ScalarType::Float32:
      return b_.CreateBitCast(b_.CreateTrunc(raw, b_.getInt32Ty()), b_.getFloatTy());
    case ScalarType::Float64:
      return b_.CreateBitCast(raw, b_.getDoubleTy());
  }
  return nullptr;
}

// An integer index operand widened to i64: signed types sign-extend, so negative indices become
// huge unsigned values and fail the `< bound` test.
Value* KernelEmitter::as_i64(uint32_t v) {
  ScalarType t = ir_.instrs[v].type;
  Value* x = vals_[v];
  Type* i64 = vec(b_.getInt64Ty());
  if (size_of(t) == 8)
    return x;
  return is_signed_int(t) ? b_.CreateSExt(x, i64) : b_.CreateZExt(x, i64);
}

void KernelEmitter::emit(const std::string& name) {
  auto* fn_ty = llvm::FunctionType::get(b_.getVoidTy(),
                                        {b_.getInt64Ty(), b_.getInt64Ty(), b_.getPtrTy()}, false);
  fn_ = llvm::Function::Create(fn_ty, llvm::Function::ExternalLinkage, name, module_);
  fn_->addFnAttr(llvm::Attribute::NoUnwind);
  fn_->addFnAttr("target-cpu", target_.cpu);
  fn_->addFnAttr("target-features", target_.features);
  if (target_.avx512) {
    // Without these, several x86 tunings split 512-bit vectors into 256-bit halves.
    fn_->addFnAttr("prefer-vector-width", "512");
    fn_->addFnAttr("min-legal-vector-width", "512");
  }
  fn_->addParamAttr(2, llvm::Attribute::NoCapture);
  fn_->addParamAttr(2, llvm::Attribute::ReadOnly);
  Value* begin = fn_->getArg(0);
  end_ = fn_->getArg(1);
  Value* args = fn_->getArg(2);

  auto* entry = new_block("entry");
  b_.SetInsertPoint(entry);

  // Load only the arguments the kernel uses.
  size_t n_params = ir_.params.size();
  std::vector<ParamSummary> uses = param_summary(ir_);
  raw_.assign(n_params, nullptr);
  ptr_.assign(n_params, nullptr);
  read_only_.assign(n_params, 0);
  for (size_t p = 0; p < n_params; ++p)
    read_only_[p] = !uses[p].writes();
  for (size_t p = 0; p < n_params; ++p) {
    if (!uses[p].used())
      continue;
    Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), args, p);
    raw_[p] = b_.CreateAlignedLoad(b_.getInt64Ty(), slot, llvm::Align(8));
    if (ir_.params[p].kind != ParamKind::Scalar)
      ptr_[p] = b_.CreateIntToPtr(raw_[p], b_.getPtrTy());
  }

  // The mode word after the parameters, read only by kernels that accumulate.
  bool accumulates = false;
  for_each_instr(ir_, [&](uint32_t, const IrInstr& in) {
    accumulates = accumulates || op_facts(in.op).accumulates;
  });
  if (accumulates) {
    Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), args, n_params);
    Value* mode = b_.CreateAlignedLoad(b_.getInt64Ty(), slot, llvm::Align(8));
    exclusive_ = b_.CreateICmpNE(b_.CreateAnd(mode, b_.getInt64(1)), b_.getInt64(0));
    unaliased_ = b_.CreateICmpNE(b_.CreateAnd(mode, b_.getInt64(kWritesUnaliased)), b_.getInt64(0));
  }

  auto* pre = new_block("pre");
  auto* exit = new_block("exit");
  b_.CreateCondBr(b_.CreateICmpULT(begin, end_), pre, exit);
  b_.SetInsertPoint(pre);
  hoist_uniforms();

  Value* w = b_.getInt64(w_);
  if (style_ == LoopStyle::VectorSplitTail) {
    auto* loop = new_block("vloop");
    auto* tail_check = new_block("tail_check");
    auto* tail = new_block("tail");
    llvm::BasicBlock* into_vloop = pre;
    Value* vbegin = begin;
    if (interleave_ > 1) {
      // Whole groups of `interleave_` vectors first, then single vectors, then the tail.
      auto* uloop = new_block("uloop");
      auto* vcheck = new_block("vloop_check");
      Value* uw = b_.getInt64(uint64_t{w_} * interleave_);
      b_.CreateCondBr(b_.CreateICmpUGE(b_.CreateSub(end_, begin), uw), uloop, vcheck);
      b_.SetInsertPoint(uloop);
      llvm::PHINode* u = b_.CreatePHI(b_.getInt64Ty(), 2, "u");
      u->addIncoming(begin, pre);
      emit_interleaved_body(u);
      Value* unext = b_.CreateNUWAdd(u, uw);
      llvm::BasicBlock* ulatch = b_.GetInsertBlock();
      b_.CreateCondBr(b_.CreateICmpUGE(b_.CreateSub(end_, unext), uw), uloop, vcheck);
      u->addIncoming(unext, ulatch);
      b_.SetInsertPoint(vcheck);
      llvm::PHINode* v = b_.CreatePHI(b_.getInt64Ty(), 2, "v");
      v->addIncoming(begin, pre);
      v->addIncoming(unext, ulatch);
      into_vloop = vcheck;
      vbegin = v;
    }
    b_.CreateCondBr(b_.CreateICmpUGE(b_.CreateSub(end_, vbegin), w), loop, tail_check);

    b_.SetInsertPoint(loop);
    llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
    i->addIncoming(vbegin, into_vloop);
    emit_body(i, nullptr);
    Value* next = b_.CreateNUWAdd(i, w);
    llvm::BasicBlock* latch = b_.GetInsertBlock();
    b_.CreateCondBr(b_.CreateICmpUGE(b_.CreateSub(end_, next), w), loop, tail_check);
    i->addIncoming(next, latch);

    b_.SetInsertPoint(tail_check);
    llvm::PHINode* it = b_.CreatePHI(b_.getInt64Ty(), 2, "it");
    it->addIncoming(vbegin, into_vloop);
    it->addIncoming(next, latch);
    b_.CreateCondBr(b_.CreateICmpULT(it, end_), tail, exit);

    b_.SetInsertPoint(tail);
    Value* mask = b_.CreateICmpULT(lane_offsets(), splat(b_.CreateSub(end_, it)));
    emit_body(it, mask);
    b_.CreateBr(exit);
  } else {
    auto* loop = new_block("loop");
    b_.CreateBr(loop);
    b_.SetInsertPoint(loop);
    llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
    i->addIncoming(begin, pre);
    Value* mask = nullptr;
    if (style_ == LoopStyle::VectorMasked) {
      // Lane mask from a scalar: the low min(end - i, w) bits set (a kmov on AVX-512).
      Value* n = b_.CreateBinaryIntrinsic(Intr::umin, b_.CreateSub(end_, i), w);
      Type* bits_ty = b_.getIntNTy(w_);
      Value* bits = b_.CreateLShr(llvm::Constant::getAllOnesValue(bits_ty),
                                  b_.CreateTrunc(b_.CreateSub(w, n), bits_ty));
      mask = b_.CreateBitCast(bits, vec(b_.getInt1Ty()));
    }
    emit_body(i, mask);
    Value* next = b_.CreateNUWAdd(i, w);
    llvm::BasicBlock* latch = b_.GetInsertBlock();
    auto* br = b_.CreateCondBr(b_.CreateICmpULT(next, end_), loop, exit);
    i->addIncoming(next, latch);
    if (style_ == LoopStyle::Scalar) {
      // Suggest the host's width to the loop vectoriser (a hint, not a demand: forcing it
      // makes LLVM print a warning for every loop it cannot vectorise).
      llvm::MDNode* width =
          llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.width"),
                                   llvm::ConstantAsMetadata::get(b_.getInt32(target_.lanes))});
      llvm::MDNode* loop_id = llvm::MDNode::getDistinct(ctx_, {nullptr, width});
      loop_id->replaceOperandWith(0, loop_id);
      br->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
    }
  }
  b_.SetInsertPoint(exit);
  b_.CreateRetVoid();

  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyFunction(*fn_, &os))
    throw BackendError("llvm backend generated invalid IR for kernel " + ir_.hash.to_hex() + ": " +
                       os.str());
}

Value* KernelEmitter::lane_offsets() {
  llvm::SmallVector<llvm::Constant*, 16> lanes;
  for (unsigned l = 0; l < w_; ++l)
    lanes.push_back(b_.getInt64(l));
  return llvm::ConstantVector::get(lanes);
}

// How many operands (a, b, c) an instruction reads if it computes a pure function of them (no
// memory, no index, no parameter), so that it is uniform when they all are; 0 for the others.
int pure_operands(IrOp op) {
  OperandRoles roles = operand_roles(op);
  return roles.params || op_facts(op).region != RegionRole::None ? 0 : std::popcount(roles.values);
}

// Values that are the same for every element: computed once in the loop preheader. Besides
// literals, scalars and broadcast loads, every pure instruction whose operands are all uniform
// (`width - 1`, `n * 2`, ...), then what depends on them: the magic numbers of divisions by
// a uniform, and which gather indices are "lane index + uniform".
void KernelEmitter::hoist_uniforms() {
  size_t n = ir_.instrs.size();
  uniform_.assign(n, nullptr);
  vals_.assign(n, nullptr);  // what emit_instr reads while hoisting: the uniforms so far
  div_magic_.assign(n, DivMagic{});
  for (size_t k = 0; k < n; ++k) {
    const IrInstr& in = ir_.instrs[k];
    switch (in.op) {
      case IrOp::Literal:
        uniform_[k] = konst(in.type, in.imm);
        break;
      case IrOp::Scalar:
        uniform_[k] = splat(from_bits(in.type, raw_[in.a]));
        break;
      case IrOp::LoadBroadcast: {
        Value* v = b_.CreateAlignedLoad(mem_ty(in.type), ptr_[in.a], align_of(in.type));
        uniform_[k] = splat(to_reg(in.type, v));
        break;
      }
      default: {
        const uint32_t operands[3] = {in.a, in.b, in.c};
        int count = pure_operands(in.op);
        bool all = count > 0;
        for (int o = 0; o < count; ++o)
          all = all && uniform_[operands[o]] != nullptr;
        if (all)
          uniform_[k] = emit_instr(in, nullptr, nullptr);
        break;
      }
    }
    vals_[k] = uniform_[k];
  }
  for (size_t k = 0; k < n; ++k) {
    const IrInstr& in = ir_.instrs[k];
    // Constant divisors are left to LLVM, which divides by them with a multiply already.
    if ((in.op == IrOp::Div || in.op == IrOp::Mod) && in.type == ScalarType::UInt32 &&
        !uniform_[k] && uniform_[in.b] && !llvm::isa<llvm::Constant>(uniform_[in.b]) &&
        !div_magic_[in.b].m)
      hoist_division_magic(in.b);
  }
  find_stencil_indices();
}

// The multiplier and shifts of Granlund and Montgomery's unsigned division by an invariant
// integer (Hacker's Delight, 2nd ed., 10-8), exact for every 32-bit n and every d >= 1:
// l = ceil(log2 d), m = floor(2^32 (2^l - d) / d) + 1 (< 2^32), and
// n / d = (t + ((n - t) >> min(l, 1))) >> max(l - 1, 0) with t = (n * m) >> 32.
// d == 1 gives m = 1, t = 0, shifts 0; a power of two 2^l gives m = 1, t = 0, n >> l. A zero
// divisor is replaced by 1 first, as in the plain division (quotient n, remainder 0).
void KernelEmitter::hoist_division_magic(uint32_t divisor) {
  Value* d = uniform_[divisor];
  if (w_ > 1)
    d = b_.CreateExtractElement(d, uint64_t{0});
  Type* i64 = b_.getInt64Ty();
  d = b_.CreateSelect(b_.CreateICmpEQ(d, b_.getInt32(0)), b_.getInt32(1), d);
  Value* l = b_.CreateSub(
      b_.getInt32(32),
      b_.CreateBinaryIntrinsic(Intr::ctlz, b_.CreateSub(d, b_.getInt32(1)), b_.getFalse()));
  Value* d64 = b_.CreateZExt(d, i64);
  Value* pow = b_.CreateShl(b_.getInt64(1), b_.CreateZExt(l, i64));  // 2^l, l <= 32
  Value* num = b_.CreateShl(b_.CreateSub(pow, d64), 32);             // < d * 2^32 <= 2^64
  Value* m = b_.CreateAdd(b_.CreateUDiv(num, d64), b_.getInt64(1));
  Value* sh1 = b_.CreateBinaryIntrinsic(Intr::umin, l, b_.getInt32(1));
  Value* sh2 = b_.CreateSub(l, sh1);
  div_magic_[divisor] = {splat(d), splat(m), splat(sh1), splat(sh2)};
}

void KernelEmitter::find_stencil_indices() {
  size_t n = ir_.instrs.size();
  lane_affine_.assign(n, false);
  auto uniform = [&](uint32_t v) { return uniform_[v] != nullptr; };
  for (size_t k = 0; k < n; ++k) {
    const IrInstr& in = ir_.instrs[k];
    if (!is_integer(in.type))
      continue;
    switch (in.op) {
      case IrOp::Index:
        lane_affine_[k] = true;
        break;
      case IrOp::Add:
        lane_affine_[k] =
            (lane_affine_[in.a] && uniform(in.b)) || (uniform(in.a) && lane_affine_[in.b]);
        break;
      case IrOp::Sub:
        lane_affine_[k] = lane_affine_[in.a] && uniform(in.b);
        break;
      case IrOp::Cast:  // truncating or same width: v[l] == v[0] + l modulo 2^bits stays
        lane_affine_[k] = is_integer(ir_.instrs[in.a].type) &&
                          size_of(ir_.instrs[in.a].type) >= size_of(in.type) && lane_affine_[in.a];
        break;
      default:
        break;
    }
  }
}

void KernelEmitter::emit_body(Value* i, Value* tail) {
  vals_.assign(ir_.instrs.size(), nullptr);
  size_t k = 0;
  emit_part(k, i, tail, nullptr);
}

// Regions (docs/kernel-ir.md). `mask` is the lanes that run the code being emitted (nullptr:
// every lane of the vector; always nullptr in scalar code, where a lane that does not run a
// part branches around it). Side effects, masked loads and gathers take it as their tail.
// Values cross a region's boundary only as Results, which become phis where control joins.

// Emits instructions from k up to the end of the current part (a LoopCond, IfElse, CallCase
// or EndRegion, where k is left) or of the kernel; Yields go to `yields`.
void KernelEmitter::emit_part(size_t& k, Value* i, Value* mask, std::vector<Value*>* yields) {
  while (k < ir_.instrs.size()) {
    const IrInstr& in = ir_.instrs[k];
    switch (op_facts(in.op).region) {
      case RegionRole::None:
        vals_[k] = uniform_[k] ? uniform_[k] : emit_instr(in, i, mask);
        ++k;
        break;
      case RegionRole::Open:
        if (in.op == IrOp::LoopBegin)
          emit_loop(k, i, mask);
        else if (in.op == IrOp::IfBegin)
          emit_if(k, i, mask);
        else
          emit_call(k, i, mask);
        break;
      case RegionRole::Yield:
        yields->push_back(vals_[in.a]);
        ++k;
        break;
      default:  // Cond, Part, Close: the part ends (Var and Result are consumed by the regions)
        return;
    }
  }
}

// A loop: the carried values are phis of the loop head; each trip evaluates the condition for
// the lanes still active, runs the body for those where it holds and keeps the others' values,
// until no lane of the vector is active (or the iteration limit is reached).
void KernelEmitter::emit_loop(size_t& k, Value* i, Value* mask) {
  const uint64_t limit = ir_.instrs[k].imm;
  ++k;
  std::vector<size_t> vars;
  for (; ir_.instrs[k].op == IrOp::LoopVar; ++k)
    vars.push_back(k);
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* head = new_block("loop_head");
  auto* body = new_block("loop_body");
  auto* exit = new_block("loop_exit");
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  std::vector<llvm::PHINode*> phis;
  for (size_t v : vars) {
    const IrInstr& var = ir_.instrs[v];
    llvm::PHINode* phi = b_.CreatePHI(val_ty(var.type), 2);
    phi->addIncoming(vals_[var.a], pre);
    phis.push_back(phi);
    vals_[v] = phi;
  }
  llvm::PHINode* active = nullptr;
  if (w_ > 1) {
    active = b_.CreatePHI(vec(b_.getInt1Ty()), 2, "active");
    active->addIncoming(mask ? mask : llvm::Constant::getAllOnesValue(vec(b_.getInt1Ty())), pre);
  }
  llvm::PHINode* trips = nullptr;
  if (limit != kNoIterationLimit) {
    trips = b_.CreatePHI(b_.getInt64Ty(), 2, "trips");
    trips->addIncoming(b_.getInt64(0), pre);
  }
  emit_part(k, i, active, nullptr);  // the condition, up to LoopCond
  Value* go = vals_[ir_.instrs[k].a];
  ++k;
  if (active)
    go = b_.CreateAnd(go, active);
  if (trips)
    go = b_.CreateAnd(go, splat(b_.CreateICmpULT(trips, b_.getInt64(limit))));
  b_.CreateCondBr(any_lane(go), body, exit);
  b_.SetInsertPoint(body);
  std::vector<Value*> next;
  emit_part(k, i, active ? go : nullptr, &next);  // the body, up to EndRegion
  ++k;
  for (size_t j = 0; j < phis.size(); ++j)
    phis[j]->addIncoming(active ? b_.CreateSelect(go, next[j], phis[j]) : next[j],
                         b_.GetInsertBlock());
  if (active)
    active->addIncoming(go, b_.GetInsertBlock());
  if (trips)
    trips->addIncoming(b_.CreateNUWAdd(trips, b_.getInt64(1)), b_.GetInsertBlock());
  b_.CreateBr(head);
  b_.SetInsertPoint(exit);
  for (size_t j = 0; j < phis.size(); ++j, ++k)
    vals_[k] = phis[j];  // the Results: the carried values when the loop ended
}

// A two-way branch. A vector runs each part only if one of its lanes takes it (a uniform mask
// runs one side); the results are selected per lane. Values of a part that did not run are
// zeros, never poison: the select then reads defined values in every lane.
void KernelEmitter::emit_if(size_t& k, Value* i, Value* mask) {
  Value* m = vals_[ir_.instrs[k].a];
  ++k;
  auto* then_bb = new_block("if_then");
  auto* else_bb = new_block("if_else");
  auto* done = new_block("if_done");
  std::vector<Value*> then_vals, else_vals;
  if (w_ == 1) {
    b_.CreateCondBr(m, then_bb, else_bb);
    b_.SetInsertPoint(then_bb);
    llvm::BasicBlock* then_end = emit_part_into(k, i, nullptr, then_vals, done);
    b_.SetInsertPoint(else_bb);
    llvm::BasicBlock* else_end = emit_part_into(k, i, nullptr, else_vals, done);
    b_.SetInsertPoint(done);
    for (size_t j = 0; j < then_vals.size(); ++j, ++k) {
      llvm::PHINode* phi = b_.CreatePHI(then_vals[j]->getType(), 2);
      phi->addIncoming(then_vals[j], then_end);
      phi->addIncoming(else_vals[j], else_end);
      vals_[k] = phi;
    }
    return;
  }
  Value* then_mask = and_mask(m, mask);
  Value* else_mask = and_mask(b_.CreateNot(m), mask);
  auto* else_check = new_block("if_else_check");
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  b_.CreateCondBr(any_lane(then_mask), then_bb, else_check);
  b_.SetInsertPoint(then_bb);
  llvm::BasicBlock* then_end = emit_part_into(k, i, then_mask, then_vals, else_check);
  b_.SetInsertPoint(else_check);
  for (Value*& v : then_vals) {
    llvm::PHINode* phi = b_.CreatePHI(v->getType(), 2);
    phi->addIncoming(llvm::Constant::getNullValue(v->getType()), pre);
    phi->addIncoming(v, then_end);
    v = phi;
  }
  b_.CreateCondBr(any_lane(else_mask), else_bb, done);
  b_.SetInsertPoint(else_bb);
  llvm::BasicBlock* else_end = emit_part_into(k, i, else_mask, else_vals, done);
  b_.SetInsertPoint(done);
  std::vector<llvm::PHINode*> phis;  // every phi first: a block starts with its phis
  for (Value* v : else_vals) {
    llvm::PHINode* phi = b_.CreatePHI(v->getType(), 2);
    phi->addIncoming(llvm::Constant::getNullValue(v->getType()), else_check);
    phi->addIncoming(v, else_end);
    phis.push_back(phi);
  }
  for (size_t j = 0; j < phis.size(); ++j, ++k)
    vals_[k] = b_.CreateSelect(m, then_vals[j], phis[j]);
}

// An N-way call. Scalar code switches on the index; a vector runs each target some lane
// selects, in order, and merges its results into the lanes that selected it. Lanes whose
// index is out of range run nothing and get zeros.
void KernelEmitter::emit_call(size_t& k, Value* i, Value* mask) {
  Value* index = vals_[ir_.instrs[k].a];
  const uint64_t n = ir_.instrs[k].imm;
  ++k;
  std::vector<Value*> acc;  // the results so far (zeros until a target sets them)
  if (w_ == 1) {
    auto* done = new_block("call_done");
    auto* none = new_block("call_none");
    llvm::SwitchInst* sw = b_.CreateSwitch(index, none, static_cast<unsigned>(n));
    std::vector<std::pair<std::vector<Value*>, llvm::BasicBlock*>> ends;
    for (uint64_t t = 0; t < n; ++t) {
      auto* target = new_block("call_target");
      sw->addCase(b_.getInt32(static_cast<uint32_t>(t)), target);
      b_.SetInsertPoint(target);
      std::vector<Value*> ys;
      llvm::BasicBlock* end = emit_part_into(k, i, nullptr, ys, done);
      ends.push_back({std::move(ys), end});
    }
    b_.SetInsertPoint(none);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    size_t n_results = ends.front().first.size();
    for (size_t j = 0; j < n_results; ++j, ++k) {
      Type* ty = ends.front().first[j]->getType();
      llvm::PHINode* phi = b_.CreatePHI(ty, static_cast<unsigned>(n + 1));
      for (auto& [ys, from] : ends)
        phi->addIncoming(ys[j], from);
      phi->addIncoming(llvm::Constant::getNullValue(ty), none);
      vals_[k] = phi;
    }
    return;
  }
  for (uint64_t t = 0; t < n; ++t) {
    Value* picks = b_.CreateICmpEQ(index, splat(b_.getInt32(static_cast<uint32_t>(t))));
    Value* run_mask = and_mask(picks, mask);
    auto* run = new_block("call_target");
    auto* next = new_block("call_next");
    llvm::BasicBlock* from = b_.GetInsertBlock();
    b_.CreateCondBr(any_lane(run_mask), run, next);
    b_.SetInsertPoint(run);
    std::vector<Value*> ys;
    emit_part(k, i, run_mask, &ys);
    ++k;
    if (t == 0)
      for (Value* y : ys)
        acc.push_back(llvm::Constant::getNullValue(y->getType()));
    std::vector<Value*> merged;
    for (size_t j = 0; j < ys.size(); ++j)
      merged.push_back(b_.CreateSelect(picks, ys[j], acc[j]));
    llvm::BasicBlock* run_end = b_.GetInsertBlock();
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
    for (size_t j = 0; j < acc.size(); ++j) {
      llvm::PHINode* phi = b_.CreatePHI(acc[j]->getType(), 2);
      phi->addIncoming(acc[j], from);
      phi->addIncoming(merged[j], run_end);
      acc[j] = phi;
    }
  }
  for (size_t j = 0; j < acc.size(); ++j, ++k)
    vals_[k] = acc[j];
}

// `interleave_` copies of the body for the vectors at i, i + w, ...: instruction k of every
// copy before instruction k + 1 of any, so the copies' dependence chains overlap.
void KernelEmitter::emit_interleaved_body(Value* i) {
  size_t n = ir_.instrs.size();
  std::vector<std::vector<Value*>> copies(interleave_, std::vector<Value*>(n, nullptr));
  std::vector<Value*> starts(interleave_);
  for (unsigned c = 0; c < interleave_; ++c)
    starts[c] = c == 0 ? i : b_.CreateNUWAdd(i, b_.getInt64(uint64_t{c} * w_));
  for (size_t k = 0; k < n; ++k) {
    for (unsigned c = 0; c < interleave_; ++c) {
      std::swap(vals_, copies[c]);
      vals_[k] = uniform_[k] ? uniform_[k] : emit_instr(ir_.instrs[k], starts[c], nullptr);
      std::swap(vals_, copies[c]);
    }
  }
}

Value* KernelEmitter::emit_index(ScalarType t, Value* i) {
  Value* idx = splat(i);
  if (w_ > 1)
    idx = b_.CreateAdd(idx, lane_offsets());
  if (is_float(t))
    return b_.CreateUIToFP(idx, val_ty(t));
  return size_of(t) == 8 ? idx : b_.CreateTrunc(idx, val_ty(t));
}

Value* KernelEmitter::emit_instr(const IrInstr& in, Value* i, Value* tail) {
  ScalarType t = in.type;
  switch (in.op) {
    case IrOp::Index:
      return emit_index(t, i);
    case IrOp::Literal:
    case IrOp::Scalar:
    case IrOp::LoadBroadcast:
      return nullptr;  // hoisted
    case IrOp::Load: {
      Value* ptr = b_.CreateInBoundsGEP(mem_ty(t), ptr_[in.a], i);
      Type* ty = vec(mem_ty(t));
      Value* v = tail ? static_cast<Value*>(b_.CreateMaskedLoad(ty, ptr, align_of(t), tail,
                                                                llvm::Constant::getNullValue(ty)))
                      : b_.CreateAlignedLoad(ty, ptr, align_of(t));
      return to_reg(t, v);
    }
    case IrOp::Store: {
      Value* ptr = b_.CreateInBoundsGEP(mem_ty(t), ptr_[in.a], i);
      Value* v = to_mem(t, vals_[in.b]);
      if (tail)
        b_.CreateMaskedStore(v, ptr, align_of(t), tail);
      else
        b_.CreateAlignedStore(v, ptr, align_of(t));
      return nullptr;
    }
    case IrOp::Gather:
      return emit_gather(in, tail);
    case IrOp::Scatter:
    case IrOp::ScatterAdd:
    case IrOp::ScatterMul:
    case IrOp::ScatterMin:
    case IrOp::ScatterMax:
    case IrOp::ScatterAnd:
    case IrOp::ScatterOr:
      emit_scatter(in, i, tail);
      return nullptr;
    case IrOp::ScatterInc:
      return emit_scatter_inc(in, tail);
    case IrOp::Neg:
    case IrOp::Not:
    case IrOp::Abs:
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
    case IrOp::Popcnt:
    case IrOp::Clz:
    case IrOp::Ctz:
      return emit_unary(in);
    case IrOp::Cast:
      return emit_cast(ir_.instrs[in.a].type, t, vals_[in.a]);
    case IrOp::Bitcast:
      return b_.CreateBitCast(vals_[in.a], val_ty(t));
    case IrOp::Add:
    case IrOp::Sub:
    case IrOp::Mul:
    case IrOp::Div:
    case IrOp::Mod:
    case IrOp::Min:
    case IrOp::Max:
    case IrOp::And:
    case IrOp::Or:
    case IrOp::Xor:
    case IrOp::Shl:
    case IrOp::Shr:
    case IrOp::Atan2:
    case IrOp::Pow:
    case IrOp::Copysign:
      return emit_binary(in);
    case IrOp::Eq:
    case IrOp::Ne:
    case IrOp::Lt:
    case IrOp::Le:
    case IrOp::Gt:
    case IrOp::Ge:
      return emit_compare(in);
    case IrOp::Fma: {
      Value *a = vals_[in.a], *x = vals_[in.b], *c = vals_[in.c];
      if (is_float(t))
        return b_.CreateIntrinsic(Intr::fma, {a->getType()}, {a, x, c});
      return b_.CreateAdd(b_.CreateMul(a, x), c);
    }
    case IrOp::Select:
      return b_.CreateSelect(vals_[in.a], vals_[in.b], vals_[in.c]);
    case IrOp::LoopBegin:
    case IrOp::LoopVar:
    case IrOp::LoopCond:
    case IrOp::IfBegin:
    case IrOp::IfElse:
    case IrOp::CallBegin:
    case IrOp::CallCase:
    case IrOp::Yield:
    case IrOp::EndRegion:
    case IrOp::Result:
      return nullptr;  // control flow: emit_part
  }
  return nullptr;
}

Value* KernelEmitter::emit_gather(const IrInstr& in, Value* tail) {
  if (w_ > 1 && lane_affine_[in.b])
    return to_reg(in.type, emit_stencil_load(in, tail));
  if (w_ > 1)
    return to_reg(in.type, emit_masked_gather(in, tail));
  ScalarType t = in.type;
  Value* idx = as_i64(in.b);
  Value* ok = emit_active_lanes(in, idx, raw_[in.d], tail);
  Type* ty = mem_ty(t);
  llvm::BasicBlock* from = b_.GetInsertBlock();
  auto* load = new_block("gather");
  auto* cont = new_block("gather_done");
  b_.CreateCondBr(ok, load, cont);
  b_.SetInsertPoint(load);
  Value* v = b_.CreateAlignedLoad(ty, b_.CreateGEP(ty, ptr_[in.a], idx), align_of(t));
  b_.CreateBr(cont);
  b_.SetInsertPoint(cont);
  llvm::PHINode* phi = b_.CreatePHI(ty, 2);
  phi->addIncoming(llvm::Constant::getNullValue(ty), from);
  phi->addIncoming(v, load);
  return to_reg(t, phi);
}

// The vector gather in memory form (Bool as bytes): llvm.masked.gather of the lanes whose mask
// is set and index in range, with the range report.
Value* KernelEmitter::emit_masked_gather(const IrInstr& in, Value* tail) {
  ScalarType t = in.type;
  Type* ty = vec(mem_ty(t));
  Value* zero = llvm::Constant::getNullValue(ty);
  auto gather64 = [&] {
    Value* idx = as_i64(in.b);
    Value* ok = emit_active_lanes(in, idx, raw_[in.d], tail);
    Value* ptrs = b_.CreateGEP(mem_ty(t), ptr_[in.a], idx);
    return b_.CreateMaskedGather(ty, ptrs, align_of(t), ok, zero);
  };
  if (w_ == 1 || size_of(ir_.instrs[in.b].type) != 4)
    return gather64();
  // A 32-bit index into a source of at most 2^31 elements: the range test in 32 bits (a
  // negative signed index is a large unsigned one) and the gather with 32-bit indices, which
  // the hardware sign-extends: right for every lane that passes the test. One instruction of
  // 16 lanes instead of widening the indices and two of 8 (10% faster on Zen 4, and the
  // widening and second compare go). Larger sources take the 64-bit gather.
  Value* bound = raw_[in.d];
  auto gather32 = [&] {
    Value* idx32 = vals_[in.b];
    Value* in_range = b_.CreateICmpULT(idx32, splat(b_.CreateTrunc(bound, b_.getInt32Ty())));
    Value* ok = emit_active_lanes(in, as_i64(in.b), bound, tail, in_range);
    return b_.CreateMaskedGather(ty, b_.CreateGEP(mem_ty(t), ptr_[in.a], idx32), align_of(t), ok,
                                 zero);
  };
  const char* names[2] = {"gather32", "gather64"};
  return branch_value(b_.CreateICmpULE(bound, b_.getInt64(uint64_t{1} << 31)), ty, names, gather32,
                      gather64);
}

// A gather whose index `v` is "lane index + uniform" (lane_affine_) has v[l] == v[0] + l
// modulo 2^bits of its type. Its lanes then read consecutive elements from buf + v[0] widened
// (sign-extended if signed) unless v[0] + l wraps in a narrower type: v[0] <= max - (w - 1)
// rules that out. When besides all w elements lie in the source (v[0] < bound and
// bound - v[0] >= w), one vector load reads them and the gather's mask selects (masked lanes
// give 0; their elements, inside the source, are read and discarded): no lane is out of range,
// so there is nothing to report either. Any other vector (a border, a wrapping index)
// takes the masked gather, range report included. Either way nothing outside the source is
// read and masked or out-of-range lanes give 0. Two scalar compares per vector decide.
Value* KernelEmitter::emit_stencil_load(const IrInstr& in, Value* tail) {
  ScalarType t = in.type;
  ScalarType it = ir_.instrs[in.b].type;
  Type* ty = vec(mem_ty(t));
  Value* zero = llvm::Constant::getNullValue(ty);
  Value* bound = raw_[in.d];
  Value* v0 = b_.CreateExtractElement(vals_[in.b], uint64_t{0});
  Value* first = v0;
  Value* no_wrap = b_.getTrue();
  if (size_of(it) < 8) {
    bool sgn = is_signed_int(it);
    first = sgn ? b_.CreateSExt(v0, b_.getInt64Ty()) : b_.CreateZExt(v0, b_.getInt64Ty());
    unsigned bits = static_cast<unsigned>(size_of(it) * 8);
    llvm::APInt max = sgn ? llvm::APInt::getSignedMaxValue(bits) : llvm::APInt::getMaxValue(bits);
    Value* last_start = llvm::ConstantInt::get(v0->getType(), max - (w_ - 1));
    no_wrap = sgn ? b_.CreateICmpSLE(v0, last_start) : b_.CreateICmpULE(v0, last_start);
  }
  Value* inside = b_.CreateAnd(b_.CreateICmpULT(first, bound),
                               b_.CreateICmpUGE(b_.CreateSub(bound, first), b_.getInt64(w_)));
  auto contiguous = [&] {
    Value* want = and_mask(vals_[in.c], tail);
    // An unmasked load (every lane is inside the source) and a select. The freeze (a no-op on
    // a loaded value) keeps x86 codegen from folding the two into a masked load, which on AMD
    // Zen 4 made the heat stencil (ff_bench_stencil) 2x slower.
    Value* row = b_.CreateAlignedLoad(ty, b_.CreateGEP(mem_ty(t), ptr_[in.a], first), align_of(t));
    return b_.CreateSelect(want, b_.CreateFreeze(row), zero);
  };
  const char* names[2] = {"stencil_load", "stencil_gather"};
  return branch_value(b_.CreateAnd(no_wrap, inside), ty, names, contiguous,
                      [&] { return emit_masked_gather(in, tail); });
}

void KernelEmitter::emit_scatter(const IrInstr& in, Value* i, Value* tail) {
  ScalarType t = in.type;
  Value* idx = as_i64(in.b);
  Value* ok = emit_active_lanes(in, idx, raw_[in.e], tail);
  Value* val = to_mem(t, vals_[in.d]);
  if (op_facts(in.op).accumulates) {
    emit_scatter_reduce_lanes(in, ptr_[in.a], idx, val, ok, tail ? nullptr : i);
    return;
  }
  if (w_ > 1) {
    Value* ptrs = b_.CreateGEP(mem_ty(t), ptr_[in.a], idx);
    b_.CreateMaskedScatter(val, ptrs, align_of(t), ok);
    return;
  }
  auto* store = new_block("scatter");
  auto* cont = new_block("scatter_done");
  b_.CreateCondBr(ok, store, cont);
  b_.SetInsertPoint(store);
  b_.CreateAlignedStore(val, b_.CreateGEP(mem_ty(t), ptr_[in.a], idx), align_of(t));
  b_.CreateBr(cont);
  b_.SetInsertPoint(cont);
}

// x86 has no vector atomics: visit the active lanes one by one (cttz over the mask bits), so
// an all-inactive vector costs one test and a branch. The lanes combine atomically, or, when
// the launch's mode word says that no other thread touches the target, with a plain load,
// combine and store (a uniform branch picks the lane loop once per vector). Lanes go in order
// either way, so an exclusive launch computes exactly what a serial loop does.
void KernelEmitter::emit_scatter_reduce_lanes(const IrInstr& in, Value* base, Value* idx,
                                              Value* val, Value* mask, Value* lane0) {
  ScalarType t = in.type;
  ReduceOp op = op_facts(in.op).reduce;
  auto* cont = new_block("scatter_add_done");
  auto* dispatch = new_block("scatter_add_mode");
  if (w_ == 1) {
    auto* atomic = new_block("scatter_add_atomic");
    auto* plain = new_block("scatter_add_plain");
    b_.CreateCondBr(mask, dispatch, cont);
    b_.SetInsertPoint(dispatch);
    Value* p = b_.CreateGEP(mem_ty(t), base, idx);
    b_.CreateCondBr(exclusive_, plain, atomic);
    for (bool is_atomic : {true, false}) {
      b_.SetInsertPoint(is_atomic ? atomic : plain);
      emit_lane_reduce(op, t, p, val, is_atomic);
      b_.CreateBr(cont);
    }
    b_.SetInsertPoint(cont);
    return;
  }
  Value* bits = b_.CreateZExt(b_.CreateBitCast(mask, b_.getIntNTy(w_)), b_.getInt32Ty());
  b_.CreateCondBr(b_.CreateICmpNE(bits, b_.getInt32(0)), dispatch, cont);
  // Exclusive with every lane active (the common case): the lanes unrolled, each taking its
  // index and value at a constant position.
  b_.SetInsertPoint(dispatch);
  uint32_t idx_param = lane0 ? read_only_lane_param(in.b) : kNoOperand;
  auto* all_lanes =
      new_block(idx_param != kNoOperand ? "scatter_add_full" : "scatter_add_plain_all");
  auto* some_lanes = new_block("scatter_add_lanes");
  uint32_t full = w_ == 32 ? ~uint32_t{0} : (uint32_t{1} << w_) - 1;
  b_.CreateCondBr(b_.CreateAnd(exclusive_, b_.CreateICmpEQ(bits, b_.getInt32(full))), all_lanes,
                  some_lanes);
  b_.SetInsertPoint(all_lanes);
  // Loads, stores and shuffles share this loop's bound. A lane's index becomes an address:
  // where it is an input's own element (a Load of a buffer nothing writes) it is read from the
  // input as a serial loop reads it, one load where extracting it takes one or two shuffles and
  // a move to an integer register. Its value stays in the vector: one shuffle instead of a load
  // (measured on Zen 4: 65,536 floats into 1,024 bins 20% faster than reading both, and than
  // extracting both; every element type gains or ties). Reading the index again needs no
  // written parameter to share the input's buffer (the mode word's unaliased bit): otherwise it
  // is extracted. A 32-bit index is extracted before it is widened: one vector to take apart, not
  // two. (Loads of each lane from a stack copy of the vectors are 1.5x slower on Zen 4: a
  // narrow load from a wide store waits for the store instead of forwarding from it.)
  ScalarType it = ir_.instrs[in.b].type;
  bool narrow = size_of(it) < 8;
  auto unrolled = [&](bool index_from_memory) {
    for (unsigned l = 0; l < w_; ++l) {
      Value* i;
      if (index_from_memory) {
        Value* at = b_.CreateAdd(lane0, b_.getInt64(l));
        i = b_.CreateAlignedLoad(mem_ty(it), b_.CreateInBoundsGEP(mem_ty(it), ptr_[idx_param], at),
                                 align_of(it));
      } else {
        i = b_.CreateExtractElement(narrow ? vals_[in.b] : idx, uint64_t{l});
      }
      if (narrow)
        i = is_signed_int(it) ? b_.CreateSExt(i, b_.getInt64Ty())
                              : b_.CreateZExt(i, b_.getInt64Ty());
      Value* v = b_.CreateExtractElement(val, uint64_t{l});
      emit_lane_reduce(op, t, b_.CreateGEP(mem_ty(t), base, i), v, false);
    }
    b_.CreateBr(cont);
  };
  if (idx_param != kNoOperand) {
    auto* from_memory = new_block("scatter_add_plain_all_loads");
    auto* extracted = new_block("scatter_add_plain_all_extracts");
    b_.CreateCondBr(unaliased_, from_memory, extracted);
    b_.SetInsertPoint(from_memory);
    unrolled(true);
    b_.SetInsertPoint(extracted);
  }
  unrolled(false);
  // Otherwise the active lanes one by one. The indices and values go to the stack once per
  // vector and each lane loads its own: an extract at a variable lane would store the whole
  // vector again for every lane.
  b_.SetInsertPoint(some_lanes);
  Value* idx_slot = spill(idx);
  Value* val_slot = spill(val);
  llvm::BasicBlock* loops[2] = {new_block("scatter_add_plain"), new_block("scatter_add_atomic")};
  b_.CreateCondBr(exclusive_, loops[0], loops[1]);
  for (bool is_atomic : {false, true}) {
    llvm::BasicBlock* loop = loops[is_atomic];
    b_.SetInsertPoint(loop);
    llvm::PHINode* rest = b_.CreatePHI(b_.getInt32Ty(), 2);
    rest->addIncoming(bits, some_lanes);
    Value* lane = b_.CreateIntrinsic(Intr::cttz, {b_.getInt32Ty()}, {rest, b_.getTrue()});
    Value* i = b_.CreateAlignedLoad(b_.getInt64Ty(), b_.CreateGEP(b_.getInt64Ty(), idx_slot, lane),
                                    llvm::Align(8));
    Value* v =
        b_.CreateAlignedLoad(mem_ty(t), b_.CreateGEP(mem_ty(t), val_slot, lane), align_of(t));
    emit_lane_reduce(op, t, b_.CreateGEP(mem_ty(t), base, i), v, is_atomic);
    Value* next = b_.CreateAnd(rest, b_.CreateSub(rest, b_.getInt32(1)));
    rest->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpNE(next, b_.getInt32(0)), loop, cont);
  }
  b_.SetInsertPoint(cont);
}

// The buffer parameter instruction `instr` reads at the lane (a Load), where that is all it
// does and no instruction writes that buffer, so a lane may read its element again later;
// kNoOperand otherwise (Bool elements too: their memory and register forms differ).
uint32_t KernelEmitter::read_only_lane_param(uint32_t instr) const {
  const IrInstr& ld = ir_.instrs[instr];
  uint32_t param = kNoOperand;
  bool other = false;
  for_each_param(ld, [&](const IrParamUse& u) {
    if (u.access == ParamAccess::LaneRead)
      param = u.param;
    else
      other = true;
  });
  if (param == kNoOperand || other || !read_only_[param] || ld.type == ScalarType::Bool)
    return kNoOperand;
  return param;
}

// Stores vector `v` to a stack slot (allocated in the entry block) and returns the slot.
Value* KernelEmitter::spill(Value* v) {
  llvm::BasicBlock& entry = fn_->getEntryBlock();
  llvm::IRBuilder<> at_entry(&entry, entry.begin());
  auto* slot = at_entry.CreateAlloca(v->getType());
  slot->setAlignment(llvm::Align(64));
  b_.CreateAlignedStore(v, slot, llvm::Align(64));
  return slot;
}

// How a scatter-reduction combines element `old` with value `v` (docs/kernel-ir.md). Float
// Min/Max take `v` unless it is NaN, when `old` is NaN, or when it is strictly below (above)
// `old`, -0 counting below +0: the result is the same in any order of lanes.
Value* KernelEmitter::emit_combine(ReduceOp op, ScalarType t, Value* old, Value* v) {
  bool fl = is_float(t), sgn = is_signed_int(t);
  switch (op) {
    case ReduceOp::Add:
      return fl ? b_.CreateFAdd(old, v) : b_.CreateAdd(old, v);
    case ReduceOp::Mul:
      return fl ? b_.CreateFMul(old, v) : b_.CreateMul(old, v);
    case ReduceOp::And:
      return b_.CreateAnd(old, v);
    case ReduceOp::Or:
      return b_.CreateOr(old, v);
    case ReduceOp::Min:
    case ReduceOp::Max:
      break;
  }
  bool max = op == ReduceOp::Max;
  if (!fl) {
    Value* take = max ? (sgn ? b_.CreateICmpSGT(v, old) : b_.CreateICmpUGT(v, old))
                      : (sgn ? b_.CreateICmpSLT(v, old) : b_.CreateICmpULT(v, old));
    return b_.CreateSelect(take, v, old);
  }
  Type* it = b_.getIntNTy(static_cast<unsigned>(size_of(t) * 8));
  Value* v_neg = b_.CreateICmpSLT(b_.CreateBitCast(v, it), llvm::ConstantInt::get(it, 0));
  Value* old_neg = b_.CreateICmpSLT(b_.CreateBitCast(old, it), llvm::ConstantInt::get(it, 0));
  Value* beyond = max ? b_.CreateFCmpOGT(v, old) : b_.CreateFCmpOLT(v, old);
  Value* zero_tie =
      b_.CreateAnd(b_.CreateFCmpOEQ(v, old), max ? b_.CreateAnd(old_neg, b_.CreateNot(v_neg))
                                                 : b_.CreateAnd(v_neg, b_.CreateNot(old_neg)));
  Value* take = b_.CreateAnd(b_.CreateFCmpORD(v, v), b_.CreateOr(b_.CreateFCmpUNO(old, old),
                                                                 b_.CreateOr(beyond, zero_tie)));
  return b_.CreateSelect(take, v, old);
}

// One lane's read-modify-write of element `p`. Atomic: an atomicrmw where x86 has one (add,
// integer min/max/and/or), otherwise a compare-exchange loop on the bits (mul, float min/max).
void KernelEmitter::emit_lane_reduce(ReduceOp op, ScalarType t, Value* p, Value* v, bool atomic) {
  using RMW = llvm::AtomicRMWInst;
  bool fl = is_float(t), sgn = is_signed_int(t);
  if (!atomic) {
    Value* old = b_.CreateAlignedLoad(mem_ty(t), p, align_of(t));
    b_.CreateAlignedStore(emit_combine(op, t, old, v), p, align_of(t));
    return;
  }
  std::optional<RMW::BinOp> rmw;
  switch (op) {
    case ReduceOp::Add:
      rmw = fl ? RMW::FAdd : RMW::Add;
      break;
    case ReduceOp::Min:
      if (!fl)
        rmw = sgn ? RMW::Min : RMW::UMin;
      break;
    case ReduceOp::Max:
      if (!fl)
        rmw = sgn ? RMW::Max : RMW::UMax;
      break;
    case ReduceOp::And:
      rmw = RMW::And;
      break;
    case ReduceOp::Or:
      rmw = RMW::Or;
      break;
    case ReduceOp::Mul:
      break;
  }
  if (rmw) {
    b_.CreateAtomicRMW(*rmw, p, v, align_of(t), llvm::AtomicOrdering::Monotonic);
    return;
  }
  // old = *p; until cmpxchg(p, old, combine(old, v)) succeeds: old = what it found.
  Type* it = b_.getIntNTy(static_cast<unsigned>(size_of(t) * 8));
  llvm::BasicBlock* from = b_.GetInsertBlock();
  auto* loop = new_block("cas_loop");
  auto* swap = new_block("cas_swap");
  auto* done = new_block("cas_done");
  auto* first = b_.CreateAlignedLoad(it, p, align_of(t));
  first->setAtomic(llvm::AtomicOrdering::Monotonic);
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  llvm::PHINode* old_bits = b_.CreatePHI(it, 2);
  old_bits->addIncoming(first, from);
  Value* old = fl ? b_.CreateBitCast(old_bits, mem_ty(t)) : static_cast<Value*>(old_bits);
  Value* next = emit_combine(op, t, old, v);
  Value* next_bits = fl ? b_.CreateBitCast(next, it) : next;
  b_.CreateCondBr(b_.CreateICmpEQ(next_bits, old_bits), done, swap);  // nothing to change
  b_.SetInsertPoint(swap);
  Value* pair =
      b_.CreateAtomicCmpXchg(p, old_bits, next_bits, align_of(t), llvm::AtomicOrdering::Monotonic,
                             llvm::AtomicOrdering::Monotonic);
  old_bits->addIncoming(b_.CreateExtractValue(pair, 0), swap);
  b_.CreateCondBr(b_.CreateExtractValue(pair, 1), done, loop);
  b_.SetInsertPoint(done);
}

// buf[p] += 1 for one lane, with a plain load and store when the launch is exclusive, else an
// atomic add; returns the element's old value.
Value* KernelEmitter::emit_lane_increment(Value* p) {
  Type* i32 = b_.getInt32Ty();
  const char* names[2] = {"scatter_inc_plain", "scatter_inc_atomic"};
  return branch_value(
      exclusive_, i32, names,
      [&] {
        Value* old = b_.CreateAlignedLoad(i32, p, llvm::Align(4));
        b_.CreateAlignedStore(b_.CreateAdd(old, b_.getInt32(1)), p, llvm::Align(4));
        return old;
      },
      [&] {
        return b_.CreateAtomicRMW(llvm::AtomicRMWInst::Add, p, b_.getInt32(1), llvm::Align(4),
                                  llvm::AtomicOrdering::Monotonic);
      });
}

// ScatterInc: the active lanes one by one, in lane order (cttz over the mask bits), each
// taking the old value of its element; inactive lanes give 0. An exclusive launch hands out
// values as a serial loop does.
Value* KernelEmitter::emit_scatter_inc(const IrInstr& in, Value* tail) {
  Value* idx = as_i64(in.b);
  Value* ok = emit_active_lanes(in, idx, raw_[in.e], tail);
  Value* base = ptr_[in.a];
  Type* i32 = b_.getInt32Ty();
  if (w_ == 1) {
    llvm::BasicBlock* from = b_.GetInsertBlock();
    auto* lane = new_block("scatter_inc");
    auto* cont = new_block("scatter_inc_done");
    b_.CreateCondBr(ok, lane, cont);
    b_.SetInsertPoint(lane);
    Value* old = emit_lane_increment(b_.CreateGEP(i32, base, idx));
    llvm::BasicBlock* last = b_.GetInsertBlock();
    b_.CreateBr(cont);
    b_.SetInsertPoint(cont);
    llvm::PHINode* phi = b_.CreatePHI(i32, 2);
    phi->addIncoming(b_.getInt32(0), from);
    phi->addIncoming(old, last);
    return phi;
  }
  // The old values collect in a stack slot that starts at 0 for every lane.
  Value* zero = llvm::Constant::getNullValue(val_ty(ScalarType::UInt32));
  Value* out_slot = spill(zero);
  Value* bits = b_.CreateZExt(b_.CreateBitCast(ok, b_.getIntNTy(w_)), i32);
  auto* start = new_block("scatter_inc_lanes");
  auto* lanes = new_block("scatter_inc_lane");
  auto* collect = new_block("scatter_inc_done");
  b_.CreateCondBr(b_.CreateICmpNE(bits, b_.getInt32(0)), start, collect);
  b_.SetInsertPoint(start);
  Value* idx_slot = spill(idx);
  b_.CreateBr(lanes);
  b_.SetInsertPoint(lanes);
  llvm::PHINode* rest = b_.CreatePHI(i32, 2);
  rest->addIncoming(bits, start);
  Value* lane = b_.CreateIntrinsic(Intr::cttz, {i32}, {rest, b_.getTrue()});
  Value* i = b_.CreateAlignedLoad(b_.getInt64Ty(), b_.CreateGEP(b_.getInt64Ty(), idx_slot, lane),
                                  llvm::Align(8));
  Value* old = emit_lane_increment(b_.CreateGEP(i32, base, i));
  b_.CreateAlignedStore(old, b_.CreateGEP(i32, out_slot, lane), llvm::Align(4));
  Value* next = b_.CreateAnd(rest, b_.CreateSub(rest, b_.getInt32(1)));
  rest->addIncoming(next, b_.GetInsertBlock());
  b_.CreateCondBr(b_.CreateICmpNE(next, b_.getInt32(0)), lanes, collect);
  b_.SetInsertPoint(collect);
  return b_.CreateAlignedLoad(zero->getType(), out_slot, llvm::Align(64));
}

// The lanes a gather or scatter `in` with index `idx` (as i64) touches: its mask (c) and the
// launch's tail where the index is below `bound`; out-of-range lanes of the mask are reported
// first when the instruction carries a range report.
Value* KernelEmitter::emit_active_lanes(const IrInstr& in, Value* idx, Value* bound, Value* tail,
                                        Value* in_range) {
  if (!in_range)
    in_range = b_.CreateICmpULT(idx, splat(bound));
  Value* want = and_mask(vals_[in.c], tail);
  if (in.flags & kIrFlagReportRange)
    emit_range_report(in, idx, in_range, want);
  return b_.CreateAnd(want, in_range);
}

// Debug range check: word 1 of the report buffer receives the index of an offending lane
// (any one: lanes and threads race), then word 0 becomes 1. A separate flag word because every
// 64-bit value, -1 included, is a possible offending index.
void KernelEmitter::emit_range_report(const IrInstr& in, Value* idx, Value* in_range, Value* mask) {
  Value* bad = b_.CreateAnd(mask, b_.CreateNot(in_range));
  Value* any = w_ > 1 ? b_.CreateOrReduce(bad) : bad;
  auto* report = new_block("range_report");
  auto* cont = new_block("range_ok");
  b_.CreateCondBr(any, report, cont);
  b_.SetInsertPoint(report);
  Value* index = idx;
  if (w_ > 1)
    index = b_.CreateIntMaxReduce(b_.CreateSelect(bad, idx, splat(b_.getInt64(0))), false);
  Value* words = ptr_[in.imm];
  auto* st_index = b_.CreateAlignedStore(index, b_.CreateConstGEP1_64(b_.getInt64Ty(), words, 1),
                                         llvm::Align(8));
  st_index->setAtomic(llvm::AtomicOrdering::Monotonic);  // several threads may report at once
  auto* st_flag = b_.CreateAlignedStore(b_.getInt64(1), words, llvm::Align(8));
  st_flag->setAtomic(llvm::AtomicOrdering::Monotonic);
  b_.CreateBr(cont);
  b_.SetInsertPoint(cont);
}

// Math of a vector through libmvec's vector-function ABI (_ZGVeN16v_expf: 'e' = AVX-512, 16
// lanes, one vector argument; `vv` for two), in pieces of its width; nullptr when it does not
// apply (no libmvec, scalar code, a width that does not divide ours).
Value* KernelEmitter::emit_vector_math(const char* name, ScalarType t,
                                       llvm::ArrayRef<Value*> args) {
  if (w_ == 1 || !target_.vector_math_isa || !is_float(t))
    return nullptr;
  bool single = t == ScalarType::Float32;
  unsigned n = target_.vector_math_bits / (single ? 32 : 64);
  if (n == 0 || w_ % n != 0 || ((w_ / n) & (w_ / n - 1)) != 0)
    return nullptr;
  std::string symbol = "_ZGV" + std::string(1, target_.vector_math_isa) + "N" + std::to_string(n) +
                       std::string(args.size(), 'v') + "_" + name + (single ? "f" : "");
  auto* piece_ty = llvm::FixedVectorType::get(elem_ty(t), n);
  std::vector<Type*> arg_tys(args.size(), piece_ty);
  llvm::FunctionCallee fn =
      module_.getOrInsertFunction(symbol, llvm::FunctionType::get(piece_ty, arg_tys, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(fn.getCallee())) {
    f->setDoesNotThrow();
    f->setDoesNotAccessMemory();  // pure: unused results can go
  }
  std::vector<Value*> pieces;
  for (unsigned k = 0; k < w_; k += n) {
    llvm::SmallVector<int, 16> lanes;
    for (unsigned i = 0; i < n; ++i)
      lanes.push_back(static_cast<int>(k + i));
    llvm::SmallVector<Value*, 2> piece_args;
    for (Value* a : args)
      piece_args.push_back(n == w_ ? a : b_.CreateShuffleVector(a, lanes));
    pieces.push_back(b_.CreateCall(fn, piece_args));
  }
  // Concatenate neighbours until one vector of w_ lanes is left.
  while (pieces.size() > 1) {
    std::vector<Value*> joined;
    for (size_t k = 0; k < pieces.size(); k += 2) {
      auto width = static_cast<int>(
          llvm::cast<llvm::FixedVectorType>(pieces[k]->getType())->getNumElements());
      llvm::SmallVector<int, 32> lanes;
      for (int i = 0; i < 2 * width; ++i)
        lanes.push_back(i);
      joined.push_back(b_.CreateShuffleVector(pieces[k], pieces[k + 1], lanes));
    }
    pieces.swap(joined);
  }
  return pieces[0];
}

// name(args) through the C library's scalar function (tanf, atan2, ...), one call per lane:
// for functions LLVM 16 has no intrinsic for, where libmvec does not apply.
Value* KernelEmitter::emit_libm_lanes(const char* name, ScalarType t, llvm::ArrayRef<Value*> args) {
  Type* et = elem_ty(t);
  std::string symbol = std::string(name) + (t == ScalarType::Float32 ? "f" : "");
  std::vector<Type*> arg_tys(args.size(), et);
  llvm::FunctionCallee fn =
      module_.getOrInsertFunction(symbol, llvm::FunctionType::get(et, arg_tys, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(fn.getCallee())) {
    f->setDoesNotThrow();
    f->setOnlyAccessesInaccessibleMemory();  // errno at most: a call nothing else reads
  }
  if (w_ == 1)
    return b_.CreateCall(fn, args);
  Value* out = llvm::PoisonValue::get(vec(et));
  for (unsigned l = 0; l < w_; ++l) {
    llvm::SmallVector<Value*, 2> lane_args;
    for (Value* a : args)
      lane_args.push_back(b_.CreateExtractElement(a, uint64_t{l}));
    out = b_.CreateInsertElement(out, b_.CreateCall(fn, lane_args), uint64_t{l});
  }
  return out;
}

// libmvec where it applies, else LLVM's intrinsic `fallback` (which it scalarises into libm
// calls, ~10x slower), or the C library per lane where LLVM 16 has no intrinsic
// (Intr::not_intrinsic).
Value* KernelEmitter::emit_math(const char* name, ScalarType t, llvm::ArrayRef<Value*> args,
                                Intr::ID fallback) {
  if (Value* v = emit_vector_math(name, t, args))
    return v;
  if (fallback == Intr::not_intrinsic)
    return emit_libm_lanes(name, t, args);
  if (args.size() == 1)
    return b_.CreateUnaryIntrinsic(fallback, args[0]);
  return b_.CreateBinaryIntrinsic(fallback, args[0], args[1]);
}

Value* KernelEmitter::emit_unary(const IrInstr& in) {
  ScalarType t = in.type;
  Value* a = vals_[in.a];
  auto intr = [&](Intr::ID id) { return b_.CreateUnaryIntrinsic(id, a); };
  auto math = [&](const char* name, Intr::ID id = Intr::not_intrinsic) {
    return emit_math(name, t, {a}, id);
  };
  switch (in.op) {
    case IrOp::Neg:
      return is_float(t) ? b_.CreateFNeg(a) : b_.CreateNeg(a);
    case IrOp::Not:
      return b_.CreateNot(a);
    case IrOp::Abs:
      // llvm.abs with is_int_min_poison = false wraps: abs(INT_MIN) == INT_MIN.
      if (is_float(t))
        return intr(Intr::fabs);
      return is_signed_int(t) ? b_.CreateBinaryIntrinsic(Intr::abs, a, b_.getFalse()) : a;
    case IrOp::Sqrt:
      return intr(Intr::sqrt);
    case IrOp::Exp:
      return math("exp", Intr::exp);
    case IrOp::Log:
      return math("log", Intr::log);
    case IrOp::Sin:
      return math("sin", Intr::sin);
    case IrOp::Cos:
      return math("cos", Intr::cos);
    case IrOp::Floor:
      return intr(Intr::floor);
    case IrOp::Ceil:
      return intr(Intr::ceil);
    case IrOp::Tan:
      return math("tan");
    case IrOp::Asin:
      return math("asin");
    case IrOp::Acos:
      return math("acos");
    case IrOp::Atan:
      return math("atan");
    case IrOp::Sinh:
      return math("sinh");
    case IrOp::Cosh:
      return math("cosh");
    case IrOp::Tanh:
      return math("tanh");
    case IrOp::Asinh:
      return math("asinh");
    case IrOp::Acosh:
      return math("acosh");
    case IrOp::Atanh:
      return math("atanh");
    case IrOp::Exp2:
      return math("exp2", Intr::exp2);
    case IrOp::Log2:
      return math("log2", Intr::log2);
    case IrOp::Erf:
      if (t == ScalarType::Float32) {
        // libmvec's erff reaches 4.0 ulp; in double and rounded once it is within 0.51.
        Value* wide = b_.CreateFPExt(a, val_ty(ScalarType::Float64));
        return b_.CreateFPTrunc(emit_math("erf", ScalarType::Float64, {wide}, Intr::not_intrinsic),
                                val_ty(t));
      }
      return math("erf");
    case IrOp::Cbrt:
      return math("cbrt");
    case IrOp::Round:  // halfway away from zero, as std::round
      return intr(Intr::round);
    case IrOp::Trunc:
      return intr(Intr::trunc);
    case IrOp::Popcnt:
      return intr(Intr::ctpop);
    case IrOp::Clz:  // zero is not poison: clz(0) == the width
      return b_.CreateBinaryIntrinsic(Intr::ctlz, a, b_.getFalse());
    case IrOp::Ctz:
      return b_.CreateBinaryIntrinsic(Intr::cttz, a, b_.getFalse());
    default:
      return nullptr;
  }
}

Value* KernelEmitter::emit_binary(const IrInstr& in) {
  ScalarType t = in.type;
  Value *a = vals_[in.a], *x = vals_[in.b];
  bool fp = is_float(t), sgn = is_signed_int(t);
  switch (in.op) {
    case IrOp::Add:
      return fp ? b_.CreateFAdd(a, x) : b_.CreateAdd(a, x);
    case IrOp::Sub:
      return fp ? b_.CreateFSub(a, x) : b_.CreateSub(a, x);
    case IrOp::Mul:
      return fp ? b_.CreateFMul(a, x) : b_.CreateMul(a, x);
    case IrOp::Div:
    case IrOp::Mod: {
      if (fp)
        return b_.CreateFDiv(a, x);  // float Mod is rejected by validation
      if (div_magic_[in.b].m)
        return emit_uniform_div(in);
      // Never trap: a zero divisor becomes 1, and INT_MIN / -1 divides by 1 instead, which
      // gives the wrapped quotient INT_MIN and remainder 0.
      Type* ty = a->getType();
      Value* bad = b_.CreateICmpEQ(x, llvm::Constant::getNullValue(ty));
      if (sgn) {
        unsigned bits = static_cast<unsigned>(size_of(t) * 8);
        Value* is_min =
            b_.CreateICmpEQ(a, llvm::ConstantInt::get(ty, llvm::APInt::getSignedMinValue(bits)));
        Value* is_m1 = b_.CreateICmpEQ(x, llvm::Constant::getAllOnesValue(ty));
        bad = b_.CreateOr(bad, b_.CreateAnd(is_min, is_m1));
      }
      Value* d = b_.CreateSelect(bad, llvm::ConstantInt::get(ty, 1), x);
      if (in.op == IrOp::Div)
        return sgn ? b_.CreateSDiv(a, d) : b_.CreateUDiv(a, d);
      return sgn ? b_.CreateSRem(a, d) : b_.CreateURem(a, d);
    }
    case IrOp::Min:
    case IrOp::Max: {
      bool max = in.op == IrOp::Max;
      if (!fp)
        return b_.CreateBinaryIntrinsic(
            max ? (sgn ? Intr::smax : Intr::umax) : (sgn ? Intr::smin : Intr::umin), a, x);
      // Spelled out instead of llvm.minnum/maxnum, which leave the sign of a zero result and
      // the treatment of signalling NaNs to the target: a NaN `a` gives `x`; otherwise `x` if
      // it is strictly less (min) or greater (max) than `a`, else `a` (docs/kernel-ir.md; the
      // tracer's constant folding computes the same). x86 selects minps/maxps plus a blend.
      Value* take_x = max ? b_.CreateFCmpOGT(x, a) : b_.CreateFCmpOLT(x, a);
      return b_.CreateSelect(b_.CreateFCmpUNO(a, a), x, b_.CreateSelect(take_x, x, a));
    }
    case IrOp::And:
      return b_.CreateAnd(a, x);
    case IrOp::Or:
      return b_.CreateOr(a, x);
    case IrOp::Xor:
      return b_.CreateXor(a, x);
    case IrOp::Shl:
    case IrOp::Shr: {
      // Shift counts wrap modulo the bit width (LLVM would give poison past it).
      Value* n = b_.CreateAnd(x, llvm::ConstantInt::get(x->getType(), size_of(t) * 8 - 1));
      if (in.op == IrOp::Shl)
        return b_.CreateShl(a, n);
      return sgn ? b_.CreateAShr(a, n) : b_.CreateLShr(a, n);
    }
    case IrOp::Atan2:
      return emit_math("atan2", t, {a, x}, Intr::not_intrinsic);
    case IrOp::Pow:
      return emit_math("pow", t, {a, x}, Intr::pow);
    case IrOp::Copysign:
      return b_.CreateBinaryIntrinsic(Intr::copysign, a, x);
    default:
      return nullptr;
  }
}

// Unsigned 32-bit n / d or n % d by a uniform divisor with its magic numbers (see
// hoist_division_magic): a 32x32->64 multiply, two shifts, an add and a subtract per vector
// instead of one scalar division per lane, which is how x86 divides vectors.
Value* KernelEmitter::emit_uniform_div(const IrInstr& in) {
  const DivMagic& dm = div_magic_[in.b];
  Value* n = vals_[in.a];
  Type* wide = vec(b_.getInt64Ty());
  Value* prod = b_.CreateMul(b_.CreateZExt(n, wide), dm.m);
  Value* t = b_.CreateTrunc(b_.CreateLShr(prod, 32), n->getType());
  Value* q = b_.CreateLShr(b_.CreateAdd(t, b_.CreateLShr(b_.CreateSub(n, t), dm.sh1)), dm.sh2);
  if (in.op == IrOp::Div)
    return q;
  return b_.CreateSub(n, b_.CreateMul(q, dm.d));
}

Value* KernelEmitter::emit_compare(const IrInstr& in) {
  ScalarType t = ir_.instrs[in.a].type;
  Value *a = vals_[in.a], *x = vals_[in.b];
  using P = llvm::CmpInst::Predicate;
  if (is_float(t)) {
    // Ordered comparisons, except != which is true for NaN (as in C++).
    P p = in.op == IrOp::Eq   ? P::FCMP_OEQ
          : in.op == IrOp::Ne ? P::FCMP_UNE
          : in.op == IrOp::Lt ? P::FCMP_OLT
          : in.op == IrOp::Le ? P::FCMP_OLE
          : in.op == IrOp::Gt ? P::FCMP_OGT
                              : P::FCMP_OGE;
    return b_.CreateFCmp(p, a, x);
  }
  bool sgn = is_signed_int(t);  // Bool compares as unsigned
  P p = in.op == IrOp::Eq   ? P::ICMP_EQ
        : in.op == IrOp::Ne ? P::ICMP_NE
        : in.op == IrOp::Lt ? (sgn ? P::ICMP_SLT : P::ICMP_ULT)
        : in.op == IrOp::Le ? (sgn ? P::ICMP_SLE : P::ICMP_ULE)
        : in.op == IrOp::Gt ? (sgn ? P::ICMP_SGT : P::ICMP_UGT)
                            : (sgn ? P::ICMP_SGE : P::ICMP_UGE);
  return b_.CreateICmp(p, a, x);
}

// The semantics of llvm.fpto[su]i.sat (saturating, NaN -> 0), spelled out as a clamp in the
// float type and a plain conversion: LLVM 16 scalarises the intrinsic on x86 (two compares, a
// convert and two moves per lane), which made a Float -> UInt32 cell index cost more than the
// rest of a particle step. The clamp's bounds are floats, so its upper bound is the largest
// float not above the integer maximum; a value at or above 2^bits (only when that differs)
// and NaN for signed targets (whose lower bound is not 0) are fixed by a select each.
Value* KernelEmitter::emit_saturating_cast(ScalarType from, ScalarType to, Value* v) {
  Type* ty = val_ty(to);
  Type* fty = v->getType();
  bool sgn = is_signed_int(to);
  int value_bits = static_cast<int>(size_of(to) * 8) - (sgn ? 1 : 0);
  uint64_t max_int = value_bits == 64 ? ~uint64_t{0} : (uint64_t{1} << value_bits) - 1;
  double limit = std::ldexp(1.0, value_bits);  // 2^bits: the first value past the maximum
  double lo = sgn ? -limit : 0.0;
  // The largest value of the float type below `limit` (exact in double for both float types).
  double hi = from == ScalarType::Float32
                  ? static_cast<double>(std::nextafter(static_cast<float>(limit), 0.f))
                  : std::nextafter(limit, 0.0);
  if (hi > static_cast<double>(max_int))
    hi = static_cast<double>(max_int);  // the maximum itself is a float (2^31 - 1 in double)
  auto fconst = [&](double c) { return llvm::ConstantFP::get(fty, c); };
  // select on ordered compares: NaN takes the lower bound (0 when unsigned).
  Value* above_lo = b_.CreateFCmpOGT(v, fconst(lo));
  Value* clamped = b_.CreateSelect(above_lo, v, fconst(lo));
  Value* below_hi = b_.CreateFCmpOLT(clamped, fconst(hi));
  clamped = b_.CreateSelect(below_hi, clamped, fconst(hi));
  Value* r = sgn ? b_.CreateFPToSI(clamped, ty) : b_.CreateFPToUI(clamped, ty);
  if (hi < static_cast<double>(max_int)) {
    Value* past = b_.CreateFCmpOGE(v, fconst(limit));
    r = b_.CreateSelect(past, llvm::ConstantInt::get(ty, max_int), r);
  }
  if (sgn)
    r = b_.CreateSelect(b_.CreateFCmpUNO(v, v), llvm::Constant::getNullValue(ty), r);
  return r;
}

Value* KernelEmitter::emit_cast(ScalarType from, ScalarType to, Value* v) {
  Type* ty = val_ty(to);
  if (from == to)
    return v;
  if (to == ScalarType::Bool) {
    Value* zero = llvm::Constant::getNullValue(v->getType());
    return is_float(from) ? b_.CreateFCmpUNE(v, zero) : b_.CreateICmpNE(v, zero);
  }
  bool from_signed = is_signed_int(from);  // Bool counts as unsigned (0/1)
  if (is_float(to)) {
    if (is_float(from))
      return size_of(to) > size_of(from) ? b_.CreateFPExt(v, ty) : b_.CreateFPTrunc(v, ty);
    return from_signed ? b_.CreateSIToFP(v, ty) : b_.CreateUIToFP(v, ty);
  }
  if (is_float(from))
    return emit_saturating_cast(from, to, v);
  return from_signed ? b_.CreateSExtOrTrunc(v, ty) : b_.CreateZExtOrTrunc(v, ty);
}

}  // namespace

unsigned interleave_factor(const KernelIR& ir) {
  if (has_indexed_access(ir))
    return 1;  // memory-bound or ordered: nothing to gain, or an order to keep
  size_t n = ir.instrs.size();
  return n <= 512 ? 8 : n <= 1024 ? 4 : n <= 2048 ? 2 : 1;
}

std::unique_ptr<llvm::Module> emit_kernel(const KernelIR& ir, const std::string& name,
                                          const CodegenTarget& target, LoopStyle style,
                                          llvm::LLVMContext& ctx, bool interleave) {
  auto module = std::make_unique<llvm::Module>(name, ctx);
  module->setTargetTriple(target.triple);
  module->setDataLayout(target.data_layout);
  KernelEmitter(ir, target, style, *module, interleave ? interleave_factor(ir) : 1).emit(name);
  return module;
}

}  // namespace ff::llvm_backend
