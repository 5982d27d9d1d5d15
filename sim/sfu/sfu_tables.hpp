// The measured tables of the SFU models (sim/native/sfu_sm90.hpp, docs/SEMANTICS.md 17): their
// file format, the deterministic predictors the file stores residuals against, and the bundle
// compiled into exmy (golden/profiles/sm90/sfu-tables.bin, written by `exmy probe sfu`).
//
// File: "EXMYSFU1", u32 table count, u32 manifest length, the manifest (JSON: device, driver,
// date, command, verification), then per table: u32 name length, name, u32 entries, u32 CRC-32 of
// the decoded little-endian u32 array, u32 payload length, payload = zlib of the residual stream
// (entry − predictor(entry), int8, or −128 followed by the int32 residual). The predictors are
// correctly rounded or fp64 series evaluations, the same on every IEEE host, so the residuals are
// mostly −1..1 and the bundle is ~1.5 MB for 80 M entries.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/native/sfu_sm90.hpp"

namespace exmy::sfu {

enum class Table : std::uint8_t { rcp, sqrt, rsqrt, ex2p, ex2n, lg2e0, lg2e1, lg2s };
constexpr int kTables = 8;

struct TableInfo {
  const char* name;
  std::uint32_t entries;
  const char* domain;  // what entry i is the instruction's result for
};
const TableInfo& table_info(Table t);

// The residual coder's predictor for entry i of table t (S, a bit per entry, predicts 0).
std::uint32_t predict(Table t, std::uint32_t i);

// The instruction input whose result is entry i of table t (for S: the input m·2^−2).
std::uint32_t table_input(Table t, std::uint32_t i);

struct Bundle {
  std::string manifest;                                    // JSON
  std::array<std::vector<std::uint32_t>, kTables> tables;  // S: one 0/1 per entry
  std::vector<std::uint32_t> lg2s_bits;                    // S packed, 2^18 words

  // Pointers for the models (valid while the bundle lives).
  native::SfuTables view() const;
};

// Encodes / decodes the file format above; `what` names the source in error messages (an
// InputError for a bad magic, a truncated file, a wrong size or CRC).
// decode fills only the tables whose bit (1 << Table) is set in `mask` (the others stay empty),
// inflating them in parallel.
constexpr unsigned kAllTables = (1u << kTables) - 1;
std::vector<std::uint8_t> encode(const Bundle& b);
Bundle decode(std::span<const std::uint8_t> bytes, const std::string& what,
              unsigned mask = kAllTables);

// Packs S (entries 0/1) into lg2s_bits.
void pack_lg2s(Bundle& b);

// The sm_90 tables: the file named by EXMY_SFU_TABLES if set, else the bundle compiled in
// (golden/profiles/sm90/sfu-tables.bin); decoded once per process. An InputError names the file
// when it is missing or corrupt, or when this build has no tables compiled in.
const Bundle& sm90();
// sm90().view(), made once.
const native::SfuTables& sm90_view();
// A view with only `rcp` decoded (the other pointers null), made once: for rcp.approx and the
// divisions built on it (quantization under bnb-cuda/triton, LLM.int8's __fdividef), which then
// skip decoding the other seven tables.
const native::SfuTables& sm90_rcp_view();

}  // namespace exmy::sfu
