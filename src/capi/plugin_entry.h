// The C side of plugins (docs/retries.md §5.4a): how an entry point is called and its table adapted.
#pragma once

namespace humus::capi {

// Hands plugin/ the callers of the C entry points (plugin::install_entry_points), once per process; every
// C ABI function that may load settings calls it first. Thread-safe, cheap after the first call.
void install_plugin_entry_points();

}  // namespace humus::capi
