// DIR/report.html: the whole report as one self-contained page — the claim table (sortable by
// clicking a column header), then every section's index.md rendered to HTML with its PNG
// figures inlined as data: URLs. Nothing is fetched from the network; the PNG/SVG and CSV files
// stay beside it.
#pragma once

#include <string>
#include <vector>

#include "reports/sections.hpp"

namespace exmy::reports {

// The subset of Markdown the report writes: #-headings, paragraphs, "- " lists, pipe tables,
// **bold**, `code`, [text](link) and ![caption](file.png) (inlined from `base_dir`, links made
// relative to `link_prefix`). Text is HTML-escaped.
std::string markdown_to_html(const std::string& md, const std::string& base_dir,
                             const std::string& link_prefix);

std::string base64(const std::string& bytes);

// The claim table as HTML (a <table class="sortable">).
std::string claims_html(const std::vector<Claim>& claims);

void write_report_html(const std::string& dir, const std::string& top_md,
                       const std::vector<SectionSummary>& ran, const std::vector<Claim>& claims);

}  // namespace exmy::reports
