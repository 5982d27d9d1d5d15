#include "reports/sections.hpp"
namespace exmy::reports {
SectionSummary run_formats_section(const ReportContext&) {
  return {"formats", "", {}, true, ""};
}
}  // namespace exmy::reports
