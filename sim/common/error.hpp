// Errors that name the bad input. The CLI maps InputError to exit code 2 with a one-line message.
#pragma once

#include <stdexcept>
#include <string>

namespace exmy {

// Bad user input: unknown format, malformed number, shape mismatch, unreadable/truncated file.
// The message names the input and what was expected.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace exmy
