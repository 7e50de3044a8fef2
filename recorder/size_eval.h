// Size expressions of a Recording: building them from backend provenance, evaluating them.
#pragma once

#include <span>

#include "recorder/recording.h"
#include "recorder/slot_map.h"

namespace ff::rec {

/// Appends the expression for a backend provenance span; leaves naming buffers that are not
/// live slots become constants (their size cannot change between replays). An empty span
/// yields Const(fallback). Returns the root node's index.
uint32_t add_expr(RecordingData& data, SizeProv prov, SlotMap& slots, uint64_t fallback);
uint32_t add_const(RecordingData& data, uint64_t value);
uint32_t add_slot_size(RecordingData& data, uint32_t slot);
uint32_t add_binary(RecordingData& data, SizeOp op, uint32_t lhs, uint32_t rhs);
/// A Rank or Ranks leaf.
uint32_t add_dist_leaf(RecordingData& data, SizeOp op);

/// Where a replay runs among ff::dist's ranks: what the Rank and Ranks leaves evaluate to.
struct RankPlace {
  uint64_t rank = 0, ranks = 1;
};

/// The rank and rank count the recording's collectives were recorded with ({0, 1} without
/// collectives): what its sizes were while recording, for tools that show them.
RankPlace recorded_place(const RecordingData& data);

/// Evaluates expression `e` given the slots' current logical sizes and the rank. Throws
/// ff::FreezeError for a negative result or a division by zero, naming `where`.
uint64_t evaluate(const RecordingData& data, uint32_t e, std::span<const uint64_t> slot_sizes,
                  RankPlace place, const char* where);

/// A total order on expressions by structure (operator, constant, slot, then operands): 0 for
/// the same expression, whichever nodes hold it.
int compare_exprs(const RecordingData& data, uint32_t a, uint32_t b);

/// Renders an expression ("(size(s3) - 1)").
std::string expr_to_string(const RecordingData& data, uint32_t e);

/// Whether the expression reads only input slots and constants (guards that can be checked
/// before the first op).
bool depends_only_on_inputs(const RecordingData& data, uint32_t e);

}  // namespace ff::rec
