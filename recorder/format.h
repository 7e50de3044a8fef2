// The recording file format in code: on-disk structs, section types and version constants.
// docs/recording-format.md is the prose version and the changelog. Every struct is read and
// written with memcpy on a little-endian host; reserved fields and padding must be zero.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace ff::format {

static_assert(std::endian::native == std::endian::little,
              "the recording format is little-endian; a big-endian reader needs byte swaps");

inline constexpr char kMagic[4] = {'F', 'F', 'R', 'C'};
/// Major: a reader of another major cannot read the file. Minor: additive only (new optional
/// sections, records that grow at their end); a reader of an older minor skips what it does
/// not know.
inline constexpr uint16_t kVersionMajor = 1;
inline constexpr uint16_t kVersionMinor = 10;

/// FileHeader::checksum_algo.
inline constexpr uint16_t kChecksumXxh3_64 = 1;

/// SectionEntry::recording of a section that belongs to the file, not to one recording (e.g.
/// the freeze data of a saved frozen function, a later optional section).
inline constexpr uint32_t kFileLevel = 0xFFFFFFFFu;

/// SectionEntry::flags bit 0: a reader that does not know the section type skips it. A
/// required section of an unknown type makes the file unreadable for that reader.
inline constexpr uint32_t kSectionOptional = 1u;

/// InfoItem::flags bit 0: a whole-session capture (inspect only; a replay is refused).
inline constexpr uint32_t kInfoCapture = 1u;

/// Section types. Persisted: never renumber, only append. Tables hold fixed-size items
/// (item_bytes); blobs (Strings, KernelCode, ConstantData) hold bytes (item_bytes = 1) that
/// table items point into by (offset, bytes).
enum class SectionType : uint32_t {
  Info = 1,           // one InfoItem per recording (required)
  Strings = 2,        // blob: backend names, guard descriptions
  Kernels = 3,        // KernelItem per kernel (index = kernel index in ops)
  KernelCode = 4,     // blob: each kernel's canonical IR bytes (KernelIR::serialize())
  Slots = 5,          // SlotItem per slot
  Exprs = 6,          // ExprItem per size-expression node
  Ops = 7,            // OpItem per op
  Args = 8,           // ArgItem per launch argument
  Accesses = 9,       // AccessItem per op access
  Guards = 10,        // GuardItem per guard
  Constants = 11,     // ConstantItem per host constant
  ConstantData = 12,  // blob: the constants' bytes
  Inputs = 13,        // InputItem per input
  Outputs = 14,       // OutputItem per output
  Passes = 15,        // since 1.2, optional: PassItem per optimiser pass that ran
  RegionNames = 16,   // since 1.8, optional: RegionNameItem per named region of a kernel
  Label = 17,         // since 1.10, optional: one LabelItem, what wrote the recording calls it
};
inline constexpr uint32_t kNumSectionTypes = 18;  // one past the largest known type

/// Since 1.1: a saved frozen function's freeze data (file level, optional; blob). Readers keep
/// it among the skipped sections; recorder/freeze_section.h decodes it
/// (docs/recording-format.md, "The freeze section").
inline constexpr uint32_t kSectionFreeze = 64;

/// "info", "strings", ... ("unknown" for other values).
const char* to_string(SectionType t);

/// The file header, at byte 0.
struct FileHeader {
  char magic[4];                 // "FFRC"
  uint16_t version_major;        // kVersionMajor of the writer
  uint16_t version_minor;        // kVersionMinor of the writer
  uint32_t header_bytes;         // bytes of this header: 96 in 1.0 (a later minor may grow it)
  uint32_t flags;                // must be 0
  uint64_t file_bytes;           // bytes of the whole file; 0 = the writer did not finish
  uint32_t n_sections;           // entries in the section table, which follows the header
  uint32_t section_entry_bytes;  // bytes per section-table entry: 48 in 1.0
  uint32_t n_recordings;         // recordings in the file (a saved frozen function holds several)
  uint16_t checksum_algo;        // kChecksumXxh3_64
  uint16_t reserved0;            // must be 0
  uint64_t header_checksum;      // XXH3-64 of header + section table, with this field zero
  char backend[32];              // stack recording 0 was recorded on, NUL-padded ("record:llvm")
  char library_version[16];      // writer's library version, NUL-padded ("0.1.0")
};

static_assert(sizeof(FileHeader) == 96);
static_assert(offsetof(FileHeader, file_bytes) == 16);
static_assert(offsetof(FileHeader, header_checksum) == 40);
static_assert(offsetof(FileHeader, backend) == 48);
static_assert(offsetof(FileHeader, library_version) == 80);

/// One entry of the section table. Sections follow the table in table order, without gaps.
struct SectionEntry {
  uint32_t type;        // SectionType (unknown values: see flags)
  uint32_t flags;       // bit 0 kSectionOptional; other bits must be 0
  uint32_t recording;   // index of the recording it belongs to, or kFileLevel
  uint32_t item_bytes;  // bytes per item (>= the 1.0 size; a later minor may append fields)
  uint64_t offset;      // bytes from the start of the file
  uint64_t n_bytes;     // = n_items * item_bytes
  uint64_t n_items;     // items (tables) or bytes (blobs)
  uint64_t checksum;    // XXH3-64 of the section's bytes
};

static_assert(sizeof(SectionEntry) == 48);
static_assert(offsetof(SectionEntry, offset) == 16);
static_assert(offsetof(SectionEntry, checksum) == 40);

/// Info: what a recording is, beyond its tables.
struct InfoItem {
  uint32_t flags;           // bit 0 kInfoCapture; other bits must be 0
  uint32_t backend_offset;  // into Strings: the stack it was recorded on
  uint32_t backend_bytes;
  uint32_t reserved;  // must be 0
};

static_assert(sizeof(InfoItem) == 16);

struct KernelItem {
  uint64_t hash_lo, hash_hi;  // XXH3-128 of the IR bytes (checked at load)
  uint64_t code_offset;       // into KernelCode
  uint64_t code_bytes;        // the IR's serialised form, with its own FFIR version
};

static_assert(sizeof(KernelItem) == 32);

struct SlotItem {
  uint8_t type;            // ScalarType
  uint8_t origin;          // rec::SlotOrigin
  uint16_t reserved0;      // must be 0
  uint32_t origin_index;   // input index or allocating op (0xFFFFFFFF: none)
  uint64_t recorded_size;  // elements while recording
  uint32_t size_expr;      // expression of the allocated count (0xFFFFFFFF: none)
  uint32_t reserved1;      // must be 0
};

static_assert(sizeof(SlotItem) == 24);

struct ExprItem {
  uint8_t op;           // SizeOp
  uint8_t reserved[3];  // must be 0
  uint32_t slot;        // BufferSize: the slot (else 0xFFFFFFFF)
  uint32_t lhs, rhs;    // binary operators: earlier nodes (else 0xFFFFFFFF)
  uint64_t value;       // Const: the value (elements or bytes, as the user says)
};

static_assert(sizeof(ExprItem) == 24);

struct OpItem {
  uint8_t code;         // rec::OpCode
  uint8_t sub;          // Copy: CopyKind; Reduce: ReduceOp; else 0
  uint8_t type;         // ScalarType
  uint8_t flag;         // PrefixSum: 1 = exclusive; else 0
  uint32_t dst, src;    // slots (0xFFFFFFFF: none)
  uint32_t size_expr;   // count (elements) or, for Copy, bytes
  uint64_t dst_offset;  // bytes into dst
  uint64_t src_offset;  // bytes into src
  uint32_t kernel;      // Launch: index into Kernels
  uint32_t arg_begin;   // Launch: [arg_begin, arg_end) into Args
  uint32_t arg_end;
  uint32_t constant;      // Copy from the host: index into Constants
  uint64_t value;         // Fill: the pattern
  uint32_t elem_size;     // Fill: bytes per element
  uint32_t access_begin;  // [access_begin, access_end) into Accesses
  uint32_t access_end;
  uint32_t reserved;  // must be 0
};

static_assert(sizeof(OpItem) == 72);
static_assert(offsetof(OpItem, dst_offset) == 16);
static_assert(offsetof(OpItem, value) == 48);

struct ArgItem {
  uint8_t is_buffer;     // 0 or 1
  uint8_t reserved0[3];  // must be 0
  uint32_t slot;         // buffer: the slot
  uint64_t offset;       // buffer: bytes into the slot
  uint32_t size_expr;    // scalar with provenance (else 0xFFFFFFFF)
  uint32_t reserved1;    // must be 0
  uint64_t bits;         // scalar: its bit pattern while recording
};

static_assert(sizeof(ArgItem) == 32);

struct AccessItem {
  uint32_t slot;
  uint8_t write;        // 0 read, 1 write
  uint8_t reserved[3];  // must be 0
};

static_assert(sizeof(AccessItem) == 8);

struct GuardItem {
  uint8_t cmp;         // SizeCmp
  uint8_t outcome;     // 0 or 1
  uint16_t reserved;   // must be 0
  uint32_t lhs, rhs;   // expressions
  uint32_t after_op;   // checked after this op (0xFFFFFFFF: before the first)
  uint64_t lhs_value;  // the values compared while recording
  uint64_t rhs_value;
  uint32_t what_offset;  // into Strings: who decided ("operand sizes of add")
  uint32_t what_bytes;
};

static_assert(sizeof(GuardItem) == 40);

struct ConstantItem {
  uint64_t data_offset;  // into ConstantData
  uint64_t data_bytes;
};

static_assert(sizeof(ConstantItem) == 16);

struct InputItem {
  uint32_t slot;
};

static_assert(sizeof(InputItem) == 4);

struct OutputItem {
  uint32_t slot;
  uint32_t reserved;  // must be 0
};

static_assert(sizeof(OutputItem) == 8);

/// Passes (1.2): what one optimiser pass did (recorder/optimize.h), for recorder-dump. A
/// reader of 1.0 or 1.1 skips the section (it is optional) and replays the same ops.
struct PassItem {
  uint32_t name_offset;  // into Strings: the pass ("fuse-launches")
  uint32_t name_bytes;
  uint32_t ops_before, ops_after;
  uint32_t launches_before, launches_after;
  uint32_t allocs_before, allocs_after;
  uint32_t guards_before, guards_after;
};

static_assert(sizeof(PassItem) == 40);

/// The name of one region of a kernel (ff::LoopOptions::name; RecordingData::region_names),
/// only for named ones, in increasing (kernel, region) order.
/// Since 1.10: a recording's label, a name given by whoever wrote the file (f.save labels a
/// frozen call's backward "<function> (backward)"). Only tools and messages read it.
struct LabelItem {
  uint32_t name_offset;  // into Strings, not empty
  uint32_t name_bytes;
};

static_assert(sizeof(LabelItem) == 8);

struct RegionNameItem {
  uint32_t kernel;       // index into Kernels
  uint32_t region;       // the kernel's region-opening markers (LoopBegin, IfBegin,
                         // CallBegin) counted in instruction order from 0
  uint32_t name_offset;  // into Strings, not empty
  uint32_t name_bytes;
};

static_assert(sizeof(RegionNameItem) == 16);

}  // namespace ff::format
