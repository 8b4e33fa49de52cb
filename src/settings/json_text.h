// Strict reading of settings' JSON text: nesting bounded, keys given twice refused, syntax errors reported
// without echoing the text (it may hold a secret).
#pragma once

#include <string>
#include <string_view>

#include "settings/schema.h"

namespace humus::settings {

// Parses `text` into `out`. Syntax errors make it return false with one problem named after `root`; keys
// given twice in one object are problems too (the parser alone would keep the last one silently).
bool parse_document(std::string_view text, const std::string& root, schema::Json& out, schema::Problems& p);

}  // namespace humus::settings
