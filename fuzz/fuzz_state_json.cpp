// state.json as exmy step reads it (sim/io/flat_json.hpp): the strict parser and every typed field
// read of cli/cmd_step.cpp.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/common/error.hpp"
#include "sim/io/flat_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s(reinterpret_cast<const char*>(data), size);
  using namespace exmy;
  try {
    const io::FlatJson js(s, "state.json");
    const auto field = [&](auto&& read) {
      try {
        read();
      } catch (const InputError&) {
      }
    };
    field([&] { (void)js.str("optimizer"); });
    field([&] { (void)js.u64("n", UINT64_MAX); });
    field([&] { (void)js.i64("step", 0, INT64_MAX / 2); });
    field([&] { (void)js.f32("scale"); });
    field([&] { (void)js.i64("growth_tracker", 0, INT32_MAX); });
    field([&] { (void)js.i64("block", 1, INT32_MAX); });
    field([&] { (void)js.boolean("is_8bit"); });
    field([&] { (void)js.str("split_format"); });
    field([&] { (void)js.f64("rms"); });
  } catch (const InputError&) {
  }
  return 0;
}
