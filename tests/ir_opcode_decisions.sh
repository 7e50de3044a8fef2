#!/usr/bin/env bash
# Outside backend/ir/, no code decides from an opcode which operand fields are values or
# parameters or how a parameter is accessed: that is backend/ir/ir_analysis.h's. This check
# finds every decision on an opcode whose fields name parameters (a `case IrOp::Load:` or an
# `op == IrOp::Store` for Scalar, Load, LoadBroadcast, Gather, Store and the scatters) and
# every use of the range-report flag (whose imm names a parameter) in the library's sources
# (tests, benchmarks and examples excepted). Only the code generators' per-opcode emitting and
# the tracer's IR emission may hold them, each file up to the count below; a new decision
# elsewhere, or a new one in those files, fails here: use op_facts()/for_each_param() instead,
# or, for a new emitting case, raise the count with a reason.
#
# usage: ir_opcode_decisions.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: ir_opcode_decisions.sh SOURCE_DIR}
cd "$src"

# file  allowed  why
allow="
backend/llvm/llvm_codegen.cpp 16 emitting: hoisted uniforms, emit_instr's switch (the scatter kinds' cases), the range report of emit_active_lanes
backend/cuda/ptx_codegen.cpp 17 emitting: hoisted uniforms, emit_instr's switch (the scatter kinds' cases), gather/scatter range reports
tracer/eval.cpp 4 emitting the IR of the tracer's gather and increment variables, with their range reports
"

param_ops='Scalar|Load|LoadBroadcast|Gather|Store|Scatter|ScatterAdd|ScatterMul|ScatterMin|ScatterMax|ScatterAnd|ScatterOr|ScatterInc'
pattern="(case[[:space:]]+|[=!]=[[:space:]]*)IrOp::($param_ops)\\b|IrOp::($param_ops)[[:space:]]*[=!]=|kIrFlagReportRange"

dirs=()
for d in backend common frontend include recorder registry replay runtime tools tracer; do
  [[ -d $d ]] && dirs+=("$d")
done
hits=$(grep -rnE --include='*.cpp' --include='*.h' --include='*.hpp' --include='*.cu' \
  "$pattern" "${dirs[@]}" | grep -v '^backend/ir/' || true)

status=0
declare -A count=()
while IFS= read -r line; do
  [[ -z $line ]] && continue
  f=${line%%:*}
  count[$f]=$((${count[$f]:-0} + 1))
done <<<"$hits"

declare -A budget=()
while read -r f n _; do
  [[ -z ${f:-} ]] && continue
  budget[$f]=$n
done <<<"$allow"

for f in "${!count[@]}"; do
  n=${count[$f]}
  b=${budget[$f]:-0}
  if ((n > b)); then
    echo "error: $f decides $n time(s) from an opcode whose fields name parameters (allowed: $b):"
    grep -nE "$pattern" "$f" | sed 's/^/  /'
    echo "  use backend/ir/ir_analysis.h (op_facts, for_each_param, param_summary) instead"
    status=1
  fi
done
for f in "${!budget[@]}"; do
  n=${count[$f]:-0}
  if ((n < budget[$f])); then
    echo "error: $f has $n such line(s), fewer than its allowance ${budget[$f]}: lower it in $0"
    status=1
  fi
done
if ((status == 0)); then
  echo "ok: no opcode decisions on operand roles or parameter accesses outside backend/ir/" \
       "beyond the code generators' emitting and the tracer's IR emission"
fi
exit $status
