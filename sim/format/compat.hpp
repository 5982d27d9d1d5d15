// `--compat NAME`: named profiles that reproduce another library's results where they differ
// from exmy's (docs/SEMANTICS.md 11.3 and 12). One registry: each profile lists the (operation,
// format) pairs it covers and the element-wise rule that serves each (sim/native/compat_*.hpp,
// host and device). Host only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/format/registry.hpp"
#include "sim/native/compat_e8m0.hpp"

namespace exmy {

// The operations a profile may cover (only element-wise casts so far).
enum class CompatOp : std::uint8_t { cast };
const char* compat_op_name(CompatOp op);

struct CompatEntry {
  CompatOp op;
  const char* format;  // the format's canonical name; any alias of it matches
  native::CompatCast rule;
};

struct CompatProfile {
  const char* name;
  const char* source;  // the library, version and function the rules transcribe
  std::vector<CompatEntry> entries;
};

// Every profile, in a fixed order.
const std::vector<CompatProfile>& compat_profiles();

// The profile called `name`; an unknown name is an InputError listing the known ones.
const CompatProfile& compat_profile(std::string_view name);

// The rule of profile p for operation op on format f; an InputError naming the profile, the
// operation and the format (and what the profile covers) when p does not cover them.
native::CompatCast compat_rule(const CompatProfile& p, CompatOp op, const Format& f);

}  // namespace exmy
