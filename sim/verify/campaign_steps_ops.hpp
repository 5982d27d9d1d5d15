// The ops of the steps campaign (internal to sim/verify): each op is a list of independent jobs
// (one configuration × input class × seed), run in parallel by run_steps. The optimizer ops live
// in campaign_steps.cpp; the quantization, dequantization and matmul ops in campaign_quant.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/verify/campaign.hpp"
#include "sim/verify/campaign_detail.hpp"

namespace exmy::verify::steps_detail {

struct Job {
  std::uint64_t units = 1;  // work for the progress line (element-steps)
  std::function<void(detail::Tally&, std::size_t max_reported)> run;
};
struct OpPlan {
  std::string name;
  std::size_t configurations = 0;
  std::vector<Job> jobs;
};

// The quantization ops (SEMANTICS 7 and 8 against the quantization oracle).
std::vector<std::string> quant_op_names();
OpPlan quant_op_plan(const std::string& name, Depth depth);

// One comparison in a steps op: counted under its input class; a mismatch keeps the op, class,
// configuration and the operands (the native and oracle values as codes or fp32 bits).
void record(detail::Tally& t, std::size_t max, const std::string& op, const std::string& cls,
            const std::string& cfg, const char* what, std::size_t index, std::uint64_t native,
            std::uint64_t oracle, ValueClass oracle_class, bool ok,
            const std::function<std::string()>& operands);

}  // namespace exmy::verify::steps_detail
