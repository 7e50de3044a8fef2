// Shared pieces of the dump views: memory figures and the recording selection.
#include <algorithm>
#include <cstdio>

#include "dump.h"
#include "dump_internal.h"
#include "freezeframe/errors.h"
#include "recorder/size_eval.h"

namespace ff::dump {

MemoryFigures memory_figures(const rec::RecordingData& d) {
  MemoryFigures m;
  std::vector<uint64_t> sizes(d.slots.size());
  for (size_t s = 0; s < d.slots.size(); ++s)
    sizes[s] = d.slots[s].recorded_size;
  std::vector<uint64_t> live(d.slots.size(), 0);
  rec::RankPlace place = rec::recorded_place(d);
  uint64_t now = 0;
  for (const rec::Op& op : d.ops) {
    if (op.code == rec::OpCode::Alloc) {
      if (op.src != rec::kNone && op.src < live.size()) {  // takes over (ends) that buffer
        now -= std::min(now, live[op.src]);
        live[op.src] = 0;
      }
      uint64_t n = 0;
      try {
        n = rec::evaluate(d, op.size_expr, sizes, place, "alloc");
      } catch (const Error&) {
        m.exact = false;
        continue;
      }
      uint64_t elem = size_of(op.type);
      uint64_t bytes = n > UINT64_MAX / elem ? UINT64_MAX : n * elem;
      live[op.dst] = bytes;
      m.bytes_allocated = std::min(UINT64_MAX - bytes, m.bytes_allocated) + bytes;
      now = std::min(UINT64_MAX - bytes, now) + bytes;
      m.peak_bytes = std::max(m.peak_bytes, now);
    } else if (op.code == rec::OpCode::Release) {
      now -= std::min(now, live[op.dst]);
      live[op.dst] = 0;
    }
  }
  return m;
}

void check_selection(const format::ParsedFile& file, const Options& options) {
  if (options.recording && *options.recording >= file.recordings.size())
    throw Error("--recording " + std::to_string(*options.recording) + ": the file holds " +
                std::to_string(file.recordings.size()) + " recording(s), numbered from 0");
}

}  // namespace ff::dump

namespace ff::dump::detail {

std::vector<std::string> op_slots(const rec::RecordingData& d, const rec::Op& op) {
  std::vector<std::string> out;
  if (op.code == rec::OpCode::Alloc || op.code == rec::OpCode::Release) {
    out.push_back("s" + std::to_string(op.dst) + (op.code == rec::OpCode::Alloc ? " new" : " end"));
    if (op.code == rec::OpCode::Alloc && op.src != rec::kNone)
      out.push_back("s" + std::to_string(op.src) + " end (its buffer)");
    return out;
  }
  std::vector<rec::SlotUse> uses;
  rec::op_uses(d, op, uses);
  for (const rec::SlotUse& u : uses)
    out.push_back("s" + std::to_string(u.slot) + " " + (u.read ? "r" : "") + (u.write ? "w" : ""));
  return out;
}

std::string op_detail(const rec::RecordingData& d, const rec::Op& op, bool by_hash) {
  auto offset = [](uint64_t o) { return o ? "+" + std::to_string(o) : std::string(); };
  switch (op.code) {
    case rec::OpCode::Alloc:
      return to_string(op.type);
    case rec::OpCode::Release:
    case rec::OpCode::Sync:
      return "";
    case rec::OpCode::Copy: {
      auto kind = static_cast<CopyKind>(op.sub);
      std::string s = to_string(kind);
      if (kind == CopyKind::HostToDevice)
        s += " constant " + std::to_string(op.constant) + " -> s" + std::to_string(op.dst) +
             offset(op.dst_offset);
      else if (kind == CopyKind::DeviceToHost)
        s += " s" + std::to_string(op.src) + offset(op.src_offset) + " -> host";
      else
        s += " s" + std::to_string(op.src) + offset(op.src_offset) + " -> s" +
             std::to_string(op.dst) + offset(op.dst_offset);
      return s;
    }
    case rec::OpCode::Fill:
      return std::to_string(op.elem_size) + "-byte value " + std::to_string(op.value) +
             (op.dst_offset ? " at " + offset(op.dst_offset) : "");
    case rec::OpCode::Launch: {
      std::string s = by_hash ? "kernel " + d.kernels[op.kernel]->hash.to_hex().substr(0, 16)
                              : "k" + std::to_string(op.kernel);
      s += " args=[";
      for (uint32_t a = op.arg_begin; a < op.arg_end; ++a) {
        const rec::LaunchArg& arg = d.args[a];
        s += a == op.arg_begin ? "" : ", ";
        if (arg.is_buffer)
          s += "s" + std::to_string(arg.slot) + offset(arg.offset);
        else if (arg.size_expr != rec::kNone)
          s += rec::expr_to_string(d, arg.size_expr);
        else
          s += std::to_string(arg.bits);
      }
      return s + "]";
    }
    case rec::OpCode::Reduce:
      return std::string(to_string(static_cast<ReduceOp>(op.sub))) + " " + to_string(op.type);
    case rec::OpCode::PrefixSum:
      return std::string(op.flag ? "exclusive " : "inclusive ") + to_string(op.type);
    case rec::OpCode::Compress:
      return "";
    case rec::OpCode::Collective: {
      auto kind = static_cast<rec::CollectiveKind>(op.sub);
      rec::CollectivePeers p = rec::collective_peers(op);
      std::string s = std::string(to_string(kind)) + " " + to_string(op.type);
      if (kind == rec::CollectiveKind::AllReduce)
        s += std::string(" ") + to_string(static_cast<ReduceOp>(op.flag));
      if (kind == rec::CollectiveKind::Broadcast)
        s += " root " + std::to_string(p.peer);
      if (kind == rec::CollectiveKind::SendRecv)
        s += " to " + ff::detail::to_string(p.dest()) + " from " + ff::detail::to_string(p.from());
      return s + " -> s" + std::to_string(op.dst) + " (rank " + std::to_string(p.rank) + " of " +
             std::to_string(op.elem_size) + ")";
    }
  }
  return "";
}

std::string op_size(const rec::RecordingData& d, const rec::Op& op) {
  return op.size_expr == rec::kNone ? "-" : rec::expr_to_string(d, op.size_expr);
}

std::string op_size_value(const rec::RecordingData& d, const rec::Op& op) {
  if (op.size_expr == rec::kNone)
    return "";
  std::vector<uint64_t> sizes(d.slots.size());
  for (size_t s = 0; s < d.slots.size(); ++s)
    sizes[s] = d.slots[s].recorded_size;
  try {
    return std::to_string(rec::evaluate(d, op.size_expr, sizes, rec::recorded_place(d), "size"));
  } catch (const Error&) {
    return "";
  }
}

std::string slot_origin(const rec::Slot& s) {
  switch (s.origin) {
    case rec::SlotOrigin::Input:
      return "input " + std::to_string(s.origin_index);
    case rec::SlotOrigin::Alloc:
      return "alloc by op " + std::to_string(s.origin_index);
    case rec::SlotOrigin::External:
      return "external";
  }
  return "?";
}

std::string guard_line(const rec::RecordingData& d, const rec::Guard& g) {
  return rec::expr_to_string(d, g.lhs) + " " + to_string(g.cmp) + " " +
         rec::expr_to_string(d, g.rhs) + " is " + (g.outcome ? "true" : "false") + " (" + g.what +
         ")" + (g.after_op == rec::kNone ? "" : " after op " + std::to_string(g.after_op));
}

std::vector<size_t> selected(size_t n_recordings, const std::optional<size_t>& one) {
  if (one)
    return {*one};
  std::vector<size_t> all(n_recordings);
  for (size_t r = 0; r < n_recordings; ++r)
    all[r] = r;
  return all;
}

std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\' && c != '"') {
      out += c;
    } else if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    }
  }
  return out;
}

std::string printable(const std::string& s) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\') {
      out += c;
    } else if (c == '\\') {
      out += "\\\\";
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    }
  }
  return out;
}

}  // namespace ff::dump::detail
