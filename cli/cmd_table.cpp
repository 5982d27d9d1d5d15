// exmy table FORMAT [--json]: every code of a format in ascending code order, with its class and
// exact value (docs/SEMANTICS.md section 11).
#include <cstdio>
#include <string>

#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "cli/options.hpp"
#include "sim/common/error.hpp"
#include "sim/format/registry.hpp"
#include "sim/oracle/exact_text.hpp"
#include "sim/oracle/mpfr_value.hpp"

namespace exmy::cli {
namespace {

// fp16/bf16 have 2^16 codes; wider formats would print billions of rows.
constexpr int kMaxTableBits = 16;

// Decimal text with enough digits to identify the value (not necessarily exact).
std::string decimal_text(mpfr_srcptr v) {
  if (mpfr_nan_p(v)) return mpfr_signbit(v) ? "-nan" : "nan";
  if (mpfr_inf_p(v)) return mpfr_signbit(v) ? "-inf" : "inf";
  char* s = nullptr;
  mpfr_asprintf(&s, "%.10Rg", v);
  std::string out(s);
  mpfr_free_str(s);
  if (mpfr_zero_p(v) && mpfr_signbit(v) && out[0] != '-') out = "-" + out;
  return out;
}

int run_table(const Args& args) {
  std::string name;
  bool json = false;
  Options opts("exmy table FORMAT [--json]",
               "Every code of a format in ascending code order, with its class and exact value "
               "(docs/SEMANTICS.md 11); formats of at most " +
                   std::to_string(kMaxTableBits) + " bits.",
               "exmy table e4m3fn");
  opts.positional("FORMAT", "a format of the registry (e4m3fn, bf16, int4, nf4, ...)",
                  Options::kRequired, [&](const std::string& v) { name = v; })
      .flag({"--json"}, "print a JSON array of {code, class, value} instead of a table",
            [&] { json = true; });
  if (!opts.parse(args)) return 0;
  if (name.empty()) throw InputError("missing FORMAT (" + opts.usage_hint() + ")");
  const Format f = parse_format(name);
  const int bits = f.code_bits();
  if (bits > kMaxTableBits) {
    throw InputError("format '" + name + "' has 2^" + std::to_string(bits) +
                     " codes; table lists formats of at most " + std::to_string(kMaxTableBits) +
                     " bits");
  }
  const std::uint64_t n = std::uint64_t{1} << bits;
  const int hex_digits = (bits + 3) / 4;
  oracle::MpfrValue v(64);
  std::string out;
  if (json) out += "[\n";
  for (std::uint64_t code = 0; code < n; ++code) {
    f.exact_value(code, v);
    const std::string value = oracle::hexfloat_text(v);
    const char* cls = class_name(f.classify(code));
    if (json) {
      out += "{\"code\": " + std::to_string(code) + ", \"class\": \"" + cls +
             "\", \"value\": " + json_string(value) + "}";
      out += code + 1 < n ? ",\n" : "\n";
    } else {
      out += format_text(
          "%6llu  0x%0*llx  %-9s  %-24s  %s\n", static_cast<unsigned long long>(code), hex_digits,
          static_cast<unsigned long long>(code), cls, value.c_str(), decimal_text(v).c_str());
    }
  }
  if (json) out += "]\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

EXMY_COMMAND("table", run_table, "every code of a format: class and exact value");

}  // namespace exmy::cli
