#include "reports/sections.hpp"
namespace exmy::reports {
SectionSummary run_adam_heatmap_section(const ReportContext&) {
  return {"adam-heatmap", "", {}, true, ""};
}
}  // namespace exmy::reports
