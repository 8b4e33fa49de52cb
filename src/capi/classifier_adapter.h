// A C classifier table (humus_classifier) as the core's classify::Classifier (docs/retries.md §5.4).
#pragma once

#include <memory>

#include "classify/classification.h"
#include "common/status.h"
#include "humus_http.h"

namespace humus::capi {

// Validated: kInvalidArgument naming humus_classifier for a bad version, kProgram for a NULL callback. The
// returned classifier owns user_data: `destroy` runs once, when the last holder lets go; on failure the caller
// keeps it.
Result<std::shared_ptr<const classify::Classifier>> make_c_classifier(const humus_classifier& table);

}  // namespace humus::capi
