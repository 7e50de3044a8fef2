// recorder-dump --dot: ops and slots as a Graphviz digraph, one cluster per recording.
#include <string>

#include "dump.h"
#include "dump_internal.h"

namespace ff::dump {
namespace {

/// A Graphviz double-quoted string.
std::string dot_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

void recording_dot(std::string& s, const rec::RecordingData& d, size_t r) {
  std::string p = "r" + std::to_string(r) + "_";
  s += "  subgraph cluster_" + std::to_string(r) +
       " {\n    label=" + dot_string("recording " + std::to_string(r) + " (" + d.backend + ")") +
       ";\n";
  std::vector<uint8_t> is_output(d.slots.size(), 0);
  for (const auto& o : d.outputs)
    is_output[o.slot] = 1;
  for (size_t i = 0; i < d.slots.size(); ++i) {
    const rec::Slot& sl = d.slots[i];
    std::string label = "s" + std::to_string(i) + "\\n" + to_string(sl.type) + " x" +
                        std::to_string(sl.recorded_size);
    std::string style;
    if (sl.origin == rec::SlotOrigin::Input)
      style = "shape=ellipse, style=filled, fillcolor=palegreen";
    else if (sl.origin == rec::SlotOrigin::External)
      style = "shape=ellipse, style=\"filled,dotted\", fillcolor=gray90";
    else if (is_output[i])
      style = "shape=ellipse, style=filled, fillcolor=lightskyblue, peripheries=2";
    else
      style = "shape=ellipse, style=dashed, color=gray40";
    if (sl.origin == rec::SlotOrigin::Input)
      label += "\\ninput " + std::to_string(sl.origin_index);
    for (size_t k = 0; k < d.outputs.size(); ++k)
      if (d.outputs[k].slot == i)
        label += "\\noutput " + std::to_string(k);
    // The label is built with Graphviz escapes (\n) already; quote only '"'.
    std::string q = "\"";
    for (char c : label)
      q += c == '"' ? std::string("\\\"") : std::string(1, c);
    s += "    " + p + "s" + std::to_string(i) + " [label=" + q + "\", " + style + "];\n";
  }
  std::vector<rec::SlotUse> uses;
  for (size_t i = 0; i < d.ops.size(); ++i) {
    const rec::Op& op = d.ops[i];
    std::string node = p + "op" + std::to_string(i);
    std::string label = std::to_string(i) + ": " + rec::to_string(op.code);
    std::string extra = detail::op_detail(d, op, false);
    if (op.code == rec::OpCode::Launch)
      extra = "k" + std::to_string(op.kernel);
    if (op.code == rec::OpCode::Alloc && op.src != rec::kNone)
      extra += " (reuses s" + std::to_string(op.src) + "'s buffer)";
    if (!extra.empty())
      label += " " + extra;
    if (op.size_expr != rec::kNone)
      label += "\n" + detail::op_size(d, op);
    s += "    " + node + " [shape=box, label=" + dot_string(label) + "];\n";
    std::string slot = p + "s" + std::to_string(op.dst);
    if (op.code == rec::OpCode::Alloc) {
      s += "    " + node + " -> " + slot + " [style=dotted, label=\"alloc\"];\n";
      if (op.src != rec::kNone)  // the donor's buffer is taken over: the donor ends here
        s += "    " + p + "s" + std::to_string(op.src) + " -> " + node +
             " [style=dashed, arrowhead=tee, color=darkorange, label=\"buffer taken over\"];\n";
      continue;
    }
    if (op.code == rec::OpCode::Release) {
      s += "    " + slot + " -> " + node + " [style=dotted, arrowhead=tee];\n";
      continue;
    }
    rec::op_uses(d, op, uses);
    for (const rec::SlotUse& u : uses) {
      std::string sn = p + "s" + std::to_string(u.slot);
      if (u.read)
        s += "    " + sn + " -> " + node + ";\n";
      if (u.write)
        s += "    " + node + " -> " + sn + " [color=firebrick];\n";
    }
  }
  s += "  }\n";
}

}  // namespace

std::string dot(const format::ParsedFile& file, const Options& options) {
  check_selection(file, options);
  std::string s =
      "digraph recording {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n";
  for (size_t r : detail::selected(file.recordings.size(), options.recording))
    recording_dot(s, *file.recordings[r], r);
  return s + "}\n";
}

}  // namespace ff::dump
