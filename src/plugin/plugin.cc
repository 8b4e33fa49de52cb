#include "plugin/plugin.h"

#include <dlfcn.h>

#include <map>
#include <new>
#include <optional>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/text.h"
#include "humus_http.h"

namespace humus::plugin {
namespace {

// One dlopen handle, closed when the last holder lets go.
class Library {
 public:
  explicit Library(void* handle) : handle_(handle) {}
  ~Library() { dlclose(handle_); }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  [[nodiscard]] void* handle() const { return handle_; }

 private:
  void* const handle_;
};

// The open libraries by path, and whether loading is forbidden. Never destroyed: settings freed during exit
// may still close their library.
struct Registry {
  Mutex mu;
  std::map<std::string, std::weak_ptr<Library>, std::less<>> open GUARDED_BY(mu);
  std::optional<std::string> forbidden GUARDED_BY(mu);
};
Registry& registry() {
  static Registry* const instance = new Registry;
  return *instance;
}

std::string key_of(std::string_view key, std::string_view part) {
  return std::string(key) + "." + std::string(part);
}
Status config_problem(std::string_view key, std::string_view part, const std::string& rule,
                      std::vector<std::string> extra_fields = {}) {
  const std::string field = key_of(key, part);
  std::vector<std::string> fields{field};
  for (std::string& f : extra_fields) fields.push_back(std::move(f));
  return Status(Code::kConfig, field + ": " + rule, std::move(fields));
}

std::string loader_message() {
  const char* why = dlerror();
  return why != nullptr ? std::string(why) : std::string("no reason given by the loader");
}

// The plugin resolves humus_* against the library that loads it, which may itself have been opened with
// RTLD_LOCAL (a program using it through dlopen) or be linked into a Python extension module: its symbols are
// made global first (RTLD_NOLOAD only changes the flags of an object already loaded). Where the core is
// linked into an executable, dlopen finds no object by that name and nothing changes: an executable exports
// humus_* only when linked with --export-dynamic. The handle is kept: the library cannot unload itself.
void make_own_symbols_global() {
  static const bool done = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&humus_version_number), &info) != 0 && info.dli_fname != nullptr) {
      (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
    }
    return true;
  }();
  (void)done;
}

// RTLD_NOW: a plugin missing a symbol fails here, naming it, not at its first call. RTLD_LOCAL: its own
// symbols stay out of everyone else's way. Not RTLD_DEEPBIND, which the sanitizers' runtimes refuse (and
// which would bind the plugin's malloc to a copy of its own rather than the process's).
Result<std::shared_ptr<Library>> open_library(std::string_view key, const std::string& path) {
  Registry& r = registry();
  const MutexLock lock(r.mu);
  if (r.forbidden) return config_problem(key, "plugin", "not loaded: " + *r.forbidden);
  if (auto it = r.open.find(path); it != r.open.end()) {
    if (std::shared_ptr<Library> held = it->second.lock()) return held;
  }
  std::erase_if(r.open, [](const auto& entry) { return entry.second.expired(); });
  make_own_symbols_global();
  (void)dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return config_problem(key, "plugin", "cannot load the plugin: " + loader_message());
  try {
    auto library = std::make_shared<Library>(handle);
    r.open[path] = library;
    return library;
  } catch (const std::bad_alloc&) {
    dlclose(handle);
    return Status(Code::kNoMemory, key_of(key, "plugin") + ": out of memory");
  }
}

// The C table type, its entry point's type and its adapter, per kind of plugin.
template <typename Table>
struct Kind;
template <>
struct Kind<humus_classifier> {
  using Object = classify::Classifier;
  static constexpr std::string_view kKey = "classify";
  static constexpr uint32_t kNewest = HUMUS_CLASSIFIER_VERSION;
  static humus_classifier fresh() { return HUMUS_CLASSIFIER_INIT; }
  static Result<std::shared_ptr<const Object>> adapt(const humus_classifier& t) {
    return classify::make_c_classifier(t);
  }
};
template <>
struct Kind<humus_breaker_policy> {
  using Object = breaker::Policy;
  static constexpr std::string_view kKey = "breaker_policy";
  static constexpr uint32_t kNewest = HUMUS_BREAKER_POLICY_VERSION;
  static humus_breaker_policy fresh() { return HUMUS_BREAKER_POLICY_INIT; }
  static Result<std::shared_ptr<const Object>> adapt(const humus_breaker_policy& t) {
    return breaker::make_c_policy(t);
  }
};

// The object made from the table, then the library its code lives in: members are destroyed in reverse, so
// the table's destroy runs while the library is still open.
template <typename Object>
struct Held {
  std::shared_ptr<Library> library;
  std::shared_ptr<const Object> object;
};

template <typename Table>
Result<std::shared_ptr<const typename Kind<Table>::Object>> load(const Spec& spec) {
  using K = Kind<Table>;
  using Entry = humus_status (*)(const char*, size_t, Table*, humus_error**);
  const std::string_view key = K::kKey;
  if (Status shape = check_spec(key, spec); !shape.ok()) return shape;
  Result<std::shared_ptr<Library>> library = open_library(key, spec.path);
  if (!library.ok()) return library.status();

  (void)dlerror();
  void* symbol = dlsym((*library)->handle(), spec.symbol.c_str());
  if (symbol == nullptr) {
    return config_problem(key, "symbol", "not found in the plugin: " + loader_message());
  }
  const auto entry = reinterpret_cast<Entry>(symbol);
  const std::string named = quote_for_message(spec.symbol);

  Table table = K::fresh();
  humus_error* reported = nullptr;
  humus_status rc = HUMUS_OK;
  try {
    rc = entry(spec.config.c_str(), spec.config.size(), &table, &reported);
  } catch (...) {
    // A C entry point cannot throw, but one written in C++ can: contained here, as for callbacks.
    humus_error_free(reported);
    return config_problem(key, "symbol", "the entry point " + named + " threw an exception");
  }
  if (rc != HUMUS_OK) {
    std::string rule = "the entry point " + named + " failed with " + humus_status_name(rc);
    std::vector<std::string> fields;
    // Read through the accessors: a pointer that is no live error reads as none.
    if (const std::string_view said = humus_error_message(reported); !said.empty())
      rule += ": " + std::string(said);
    for (size_t i = 0; i < humus_error_field_count(reported); ++i) {
      fields.push_back(key_of(key, "config." + std::string(humus_error_field(reported, i))));
    }
    humus_error_free(reported);
    return config_problem(key, "symbol", rule, std::move(fields));
  }
  humus_error_free(reported);  // an entry point that succeeded has nothing to say

  Result<std::shared_ptr<const typename K::Object>> adapted = K::adapt(table);
  if (!adapted.ok()) {
    // The plugin handed its table over: nobody else can release its user_data. Its destroy sits at the same
    // place in every version this library knows, so it is called when the version is one of them.
    if (table.version >= 1 && table.version <= K::kNewest && table.destroy != nullptr) {
      table.destroy(table.user_data);
    }
    return config_problem(
        key, "symbol",
        "the entry point " + named + " filled a table that is refused: " + adapted.status().message());
  }
  try {
    auto held = std::make_shared<Held<typename K::Object>>(
        Held<typename K::Object>{std::move(library).value(), std::move(adapted).value()});
    const typename K::Object* object = held->object.get();
    return std::shared_ptr<const typename K::Object>(std::move(held), object);
  } catch (const std::bad_alloc&) {
    return Status(Code::kNoMemory, key_of(key, "symbol") + ": out of memory");
  }
}

}  // namespace

Status check_spec(std::string_view key, const Spec& spec) {
  std::vector<Status> problems;
  if (spec.path.empty()) {
    problems.push_back(config_problem(key, "plugin", "required (the shared object's absolute path)"));
  } else if (spec.path.find('\0') != std::string::npos) {
    problems.push_back(config_problem(key, "plugin", "must not contain a NUL byte"));
  } else if (spec.path.front() != '/') {
    // A bare name would be searched for along LD_LIBRARY_PATH and the system's directories, a relative path
    // from whatever the working directory is: the configuration names the one file it trusts.
    problems.push_back(
        config_problem(key, "plugin", "must be an absolute path, got " + quote_for_message(spec.path)));
  }
  if (spec.symbol.empty()) {
    problems.push_back(config_problem(key, "symbol", "required (the entry point's name)"));
  } else if (spec.symbol.find('\0') != std::string::npos) {
    problems.push_back(config_problem(key, "symbol", "must not contain a NUL byte"));
  }
  if (problems.empty()) return Status();
  if (problems.size() == 1) return problems.front();
  return Status(Code::kConfig, problems[0].message() + "; " + problems[1].message(),
                {problems[0].fields().front(), problems[1].fields().front()});
}

Result<std::shared_ptr<const classify::Classifier>> load_classifier(const Spec& spec) {
  return load<humus_classifier>(spec);
}

Result<std::shared_ptr<const breaker::Policy>> load_breaker_policy(const Spec& spec) {
  return load<humus_breaker_policy>(spec);
}

void forbid_loading(std::string why) {
  Registry& r = registry();
  const MutexLock lock(r.mu);
  r.forbidden = std::move(why);
}

}  // namespace humus::plugin
