#include "metrics.h"

namespace humus::cli {
namespace {

struct Collect {
  const std::string* name;
  std::map<std::string, uint64_t>* out;
};

humus_status collect_point(void* user_data, const humus_metric_point* point) {
  const auto* c = static_cast<const Collect*>(user_data);
  if (point->kind == HUMUS_METRIC_COUNTER && *c->name == point->name && point->attribute_value != nullptr) {
    (*c->out)[point->attribute_value] += point->value;
  }
  return HUMUS_OK;
}

}  // namespace

std::map<std::string, uint64_t> counter_by_attribute(humus_runtime* rt, const std::string& name) {
  std::map<std::string, uint64_t> out;
  Collect c{&name, &out};
  humus_error* err = nullptr;
  if (humus_runtime_metrics_collect(rt, &collect_point, &c, &err) != HUMUS_OK) {
    humus_error_free(err);
    return {};
  }
  return out;
}

std::string decisions_text(const std::map<std::string, uint64_t>& now,
                           const std::map<std::string, uint64_t>& before) {
  std::string text;
  for (const char* decision : {"done", "again", "throttled", "exhausted", "expired", "stopped"}) {
    const auto at = [&](const std::map<std::string, uint64_t>& m) {
      const auto it = m.find(decision);
      return it == m.end() ? uint64_t{0} : it->second;
    };
    const uint64_t n = at(now) - at(before);
    if (n > 0) text += (text.empty() ? "" : ", ") + std::string(decision) + " " + std::to_string(n);
  }
  return text.empty() ? "none" : text;
}

}  // namespace humus::cli
