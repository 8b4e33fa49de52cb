// The upstreams registry (docs/upstreams.md §15.1): one client per named dependency, built from one JSON document
//   {"upstreams": {"billing": {"base_url": "https://billing:8443", "timeout": "5s", …}, …}}
// whose per-upstream keys are the settings of docs/settings.md §3. Where a service runs decides its dependencies'
// addresses, so HUMUS_HTTP_UPSTREAMS__<NAME>__BASE_URL in the environment wins over the file's base_url
// (NAME: the upstream's name in uppercase, '-' as '_'); a disagreement is logged once, through the runtime's
// log sink. Every other key: the file wins.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/client.h"
#include "client/runtime.h"

namespace humus::upstreams {

// Reads one environment variable; nothing when it is unset. Injected so tests need not touch the process's
// environment.
using Environment = std::function<std::optional<std::string>(const std::string& name)>;
Environment process_environment();

// "HUMUS_HTTP_UPSTREAMS__BILLING_API__BASE_URL" for "billing-api".
std::string base_url_variable(std::string_view upstream);

struct Upstream {
  std::string name;
  std::unique_ptr<client::Client> client;
};

// Builds every upstream's client on `runtime`, sorted by name. Every problem of the document at once, as
// kConfig with field paths like "upstreams.billing.timeout": keys other than "upstreams", names other than
// letters, digits, '_' and '-', and every bad setting (a misspelt key named with its nearest valid one).
// Rules across one upstream's fields: kProgram, as for a client. `runtime` must outlive the clients.
Result<std::vector<Upstream>> build_upstreams(client::Runtime& runtime, std::string_view json,
                                              const Environment& env);

// The error for an upstream asked for by a name not configured: kInvalidArgument listing the names that are.
Status no_such_upstream(std::string_view name, const std::vector<std::string>& configured);

}  // namespace humus::upstreams
