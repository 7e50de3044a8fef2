// Text listing of a Recording.
#include "recorder/recording_text.h"

#include "recorder/size_eval.h"

namespace ff::rec {

std::string pass_counts(const PassStats& p) {
  auto change = [](const char* what, uint32_t before, uint32_t after) {
    return std::string(what) + " " + std::to_string(before) + " -> " + std::to_string(after);
  };
  return change("ops", p.ops_before, p.ops_after) + ", " +
         change("launches", p.launches_before, p.launches_after) + ", " +
         change("allocs", p.allocs_before, p.allocs_after) + ", " +
         change("guards", p.guards_before, p.guards_after);
}

std::string to_text(const RecordingData& d) {
  std::string s = "recording on '" + d.backend + "': " + d.summary() + "\n";
  for (size_t i = 0; i < d.slots.size(); ++i) {
    const Slot& sl = d.slots[i];
    s += "  slot s" + std::to_string(i) + ": " + to_string(sl.type) + " " + to_string(sl.origin);
    if (sl.origin_index != kNone)
      s += " " + std::to_string(sl.origin_index);
    s += " recorded_size=" + std::to_string(sl.recorded_size) + "\n";
  }
  for (size_t i = 0; i < d.ops.size(); ++i) {
    const Op& op = d.ops[i];
    s += "  op " + std::to_string(i) + ": " + to_string(op.code);
    if (op.code == OpCode::Launch)
      s += " k" + std::to_string(op.kernel);
    if (op.dst != kNone)
      s += " dst=s" + std::to_string(op.dst);
    if (op.src != kNone)
      s += " src=s" + std::to_string(op.src);
    if (op.size_expr != kNone)
      s += " size=" + expr_to_string(d, op.size_expr);
    if (op.code == OpCode::Launch) {
      s += " args=[";
      for (uint32_t a = op.arg_begin; a < op.arg_end; ++a) {
        const LaunchArg& arg = d.args[a];
        s += a == op.arg_begin ? "" : ", ";
        if (arg.is_buffer)
          s +=
              "s" + std::to_string(arg.slot) + (arg.offset ? "+" + std::to_string(arg.offset) : "");
        else if (arg.size_expr != kNone)
          s += expr_to_string(d, arg.size_expr);
        else
          s += std::to_string(arg.bits);
      }
      s += "]";
    }
    s += "\n";
  }
  for (size_t g = 0; g < d.guards.size(); ++g) {
    const Guard& gd = d.guards[g];
    s += "  guard " + std::to_string(g) + ": " + expr_to_string(d, gd.lhs) + " " +
         to_string(gd.cmp) + " " + expr_to_string(d, gd.rhs) + " is " +
         (gd.outcome ? "true" : "false") + " (" + gd.what + ")" +
         (gd.after_op == kNone ? "" : " after op " + std::to_string(gd.after_op)) + "\n";
  }
  for (size_t k = 0; k < d.inputs.size(); ++k)
    s += "  input " + std::to_string(k) + " = s" + std::to_string(d.inputs[k]) + "\n";
  for (size_t k = 0; k < d.outputs.size(); ++k)
    s += "  output " + std::to_string(k) + " = s" + std::to_string(d.outputs[k].slot) + "\n";
  for (const PassStats& p : d.passes)
    s += "  pass " + p.name + ": " + pass_counts(p) + "\n";
  for (size_t k = 0; k < d.kernels.size(); ++k) {
    s += "  kernel k" + std::to_string(k) + ": " + d.kernels[k]->to_string();
    if (const RegionNames* names = d.region_names_of(k)) {
      s += "  kernel k" + std::to_string(k) + " regions:";
      for (const std::string& n : *names)
        s += n.empty() ? std::string(" (unnamed)") : " '" + n + "'";
      s += "\n";
    }
  }
  return s;
}

}  // namespace ff::rec
