// Matmul-input range tallies against masked ExMy limits (operand_range.hpp).
#include "reports/lm/operand_range.hpp"

#include <cmath>

#include "reports/output_files.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/mask.hpp"

namespace exmy::reports::lm {

void add_histogram(OperandHistogram& into, const OperandHistogram& from) {
  for (std::size_t i = 0; i < into.bin.size(); ++i) into.bin[i] += from.bin[i];
  into.zeros += from.zeros;
  into.nans += from.nans;
}

OperandHistogram pass_histogram(const RangeHistograms& r, int pass) {
  OperandHistogram h;
  for (int s = 0; s < kGemmSites; ++s) {
    for (int p = 0; p < kPasses; ++p) {
      if (pass >= 0 && p != pass) continue;
      for (int o = 0; o < 2; ++o)
        add_histogram(h, r.at(static_cast<GemmSite>(s), static_cast<Pass>(p), o));
    }
  }
  return h;
}

double LimitTally::above_share() const {
  return elements > 0 ? static_cast<double>(above_max) / static_cast<double>(elements) : NAN;
}
double LimitTally::below_share() const {
  return elements > 0 ? static_cast<double>(below_min_normal) / static_cast<double>(elements) : NAN;
}

LimitTally limit_tally(const OperandHistogram& h, int exp_bits) {
  LimitTally t;
  t.exp_bits = exp_bits;
  t.bias = (1 << (exp_bits - 1)) - 1;
  // The masking's own limits (sim/native/mask.hpp), which count_mask_limits compares against.
  const std::uint32_t max_bits = native::mask_max_bits(exp_bits, 7);
  const std::uint32_t min_bits = native::mask_min_normal_bits(exp_bits);
  t.max = native::float_of(max_bits);
  t.min_normal = native::float_of(min_bits);
  const auto binade = [&](int f) { return h.bin[2 * f] + h.bin[2 * f + 1]; };
  for (long long c : h.bin) t.elements += c;
  t.zeros = h.zeros;
  t.nonfinite = binade(255);
  // max lies in the binade of exponent field 127 + bias with mantissa field 0x7F0000: above it
  // are that binade's top (bin 2 f + 1) and every higher binade; inf (field 255 less the NaNs).
  const int fmax = static_cast<int>(max_bits >> 23);  // 127 + bias
  t.above_max = h.bin[2 * fmax + 1] + binade(255) - h.nans;
  for (int f = fmax + 1; f < 255; ++f) t.above_max += binade(f);
  // min normal starts the binade of field 128 - bias (>= 1 for E <= 8): below it every lower
  // binade, field 0's subnormals included, less the zeros.
  const int fmin = static_cast<int>(min_bits >> 23);  // 128 - bias
  for (int f = 0; f < fmin; ++f) t.below_min_normal += binade(f);
  t.below_min_normal -= h.zeros;
  return t;
}

bool outer_binds(const LimitTally& t, double min_share) {
  const auto need = static_cast<long long>(std::ceil(min_share * static_cast<double>(t.elements)));
  return t.elements > 0 && t.above_max > 0 && t.above_max >= need;
}

int binding_width(const std::vector<LimitTally>& tallies, double min_share) {
  int best = -1, narrowest = -1;
  for (const LimitTally& t : tallies) {
    if (narrowest < 0 || t.exp_bits < narrowest) narrowest = t.exp_bits;
    if (outer_binds(t, min_share) && t.exp_bits > best) best = t.exp_bits;
  }
  return best >= 0 ? best : narrowest;
}

std::string operand_range_csv(const RangeHistograms& r, int ablation_exp) {
  Csv c({"pass", "exp_bits", "man_bits", "bias", "max", "min_normal", "elements", "zeros",
         "nonfinite", "above_max", "below_min_normal", "above_max_share", "below_min_normal_share",
         "ablation_width"});
  for (int p = -1; p < kPasses; ++p) {
    const OperandHistogram h = pass_histogram(r, p);
    for (int e = kRangeMinExp; e <= kRangeMaxExp; ++e) {
      const LimitTally t = limit_tally(h, e);
      c.row()
          .add(std::string(p < 0 ? "all" : pass_name(static_cast<Pass>(p))))
          .add(static_cast<long long>(e))
          .add(7LL)
          .add(static_cast<long long>(t.bias))
          .add(t.max)
          .add(t.min_normal)
          .add(t.elements)
          .add(t.zeros)
          .add(t.nonfinite)
          .add(t.above_max)
          .add(t.below_min_normal)
          .add(t.above_share())
          .add(t.below_share())
          .add(static_cast<long long>(e == ablation_exp));
    }
  }
  return c.text();
}

std::string operand_hist_csv(const RangeHistograms& r) {
  Csv c({"site", "pass", "operand", "kind", "log2_floor", "elements", "above_m7_top"});
  for (int s = 0; s < kGemmSites; ++s) {
    for (int p = 0; p < kPasses; ++p) {
      for (int o = 0; o < 2; ++o) {
        const OperandHistogram& h = r.at(static_cast<GemmSite>(s), static_cast<Pass>(p), o);
        const auto head = [&](const char* kind) -> Csv& {
          return c.row()
              .add(std::string(site_name(static_cast<GemmSite>(s))))
              .add(std::string(pass_name(static_cast<Pass>(p))))
              .add(std::string(o == 0 ? "A" : "B"))
              .add(std::string(kind));
        };
        const long long sub = h.bin[0] + h.bin[1] - h.zeros;
        const long long inf = h.bin[510] + h.bin[511] - h.nans;
        if (h.zeros > 0) head("zero").add(std::string()).add(h.zeros).add(0LL);
        if (sub > 0) head("subnormal").add(std::string()).add(sub).add(0LL);
        for (int f = 1; f < 255; ++f) {
          const long long n = h.bin[2 * f] + h.bin[2 * f + 1];
          if (n > 0)
            head("normal").add(static_cast<long long>(f - 127)).add(n).add(h.bin[2 * f + 1]);
        }
        if (inf > 0) head("inf").add(std::string()).add(inf).add(0LL);
        if (h.nans > 0) head("nan").add(std::string()).add(h.nans).add(0LL);
      }
    }
  }
  return c.text();
}

}  // namespace exmy::reports::lm
