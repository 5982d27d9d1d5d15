// Argument helpers shared by the subcommands: integers, flags and JSON text. Every parser throws
// exmy::InputError naming the bad text and what was expected. Rounding modes, overflow policies
// and tie rules are the domain's (sim/format/rounding_names.hpp, included here for every command).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/format/rounding_names.hpp"
#include "sim/io/json_write.hpp"

namespace exmy::cli {

// A decimal or 0x-hex unsigned integer <= max; `what` names the option in the message.
std::uint64_t parse_uint(std::string_view text, const std::string& what, std::uint64_t max);

// The comma-separated items of a list option, empty items kept (so that a caller can name them
// in its error): "a,,b" -> {"a", "", "b"}; "" -> {""}.
std::vector<std::string> split_commas(std::string_view text);

// Flag names of an exmy::flag bit set, as a JSON array: ["inexact","overflow"].
std::string flags_json(std::uint32_t flags);
// The same, space separated ("-" when none), for plain text.
std::string flags_text(std::uint32_t flags);

// printf into a string of whatever length the text needs: a table line with a long input or an
// exact decimal of hundreds of digits is never cut (a fixed buffer cut the line and its newline,
// so that the next value landed on the same line).
std::string format_text(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// A JSON string literal of s (sim/io/json_write.hpp: the one quoting).
using io::json_string;

}  // namespace exmy::cli
