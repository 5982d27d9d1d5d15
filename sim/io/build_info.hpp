// The commit this exmy was built from (git rev-parse --short=12 at configure time, "unknown"
// outside a git checkout), for --version, provenance in reports, corpora and verify summaries.
// A function rather than a macro on every target: a macro made every commit recompile the whole
// tree after a reconfigure.
#pragma once

namespace exmy {

const char* build_git_sha();

}  // namespace exmy
