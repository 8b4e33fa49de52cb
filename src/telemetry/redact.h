// What a URL may show in telemetry (docs/telemetry.md §13.1): OpenTelemetry's HTTP semantic conventions ask
// that url.full never carry user-info and that the values of query parameters known to carry credentials be
// written as REDACTED.
#pragma once

#include <string>
#include <string_view>

namespace humus::telemetry {

// `url` with any user-info removed and the values of AWSAccessKeyId, Signature, sig and X-Goog-Signature
// (names compared exactly, as the conventions list them) replaced by "REDACTED". The fragment is dropped.
std::string redacted_url(std::string_view url);

}  // namespace humus::telemetry
