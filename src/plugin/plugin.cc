#include "plugin/plugin.h"

#include <dlfcn.h>

#include <map>
#include <new>
#include <optional>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/text.h"

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
  EntryPoints entry_points GUARDED_BY(mu);
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
// made global first (RTLD_NOLOAD only changes the flags of an object already loaded). The object is found by
// the address of a function of this file: the core and the humus_* it exports are linked into the same one.
// Where the core is linked into an executable, dlopen finds no object by that name and nothing changes: an
// executable exports humus_* only when linked with --export-dynamic. The handle is kept: the library cannot
// unload itself.
void make_own_symbols_global() {
  static const bool done = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&forbid_loading), &info) != 0 && info.dli_fname != nullptr) {
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

// The settings key of each kind of plugin, and its entry point's caller among the installed ones.
template <typename Object>
struct Kind;
template <>
struct Kind<classify::Classifier> {
  static constexpr std::string_view kKey = "classify";
  static EntryCall<classify::Classifier> call(const EntryPoints& e) { return e.classifier; }
};
template <>
struct Kind<breaker::Policy> {
  static constexpr std::string_view kKey = "breaker_policy";
  static EntryCall<breaker::Policy> call(const EntryPoints& e) { return e.breaker_policy; }
};

// The installed caller of this kind's entry points, into `call`; nothing is opened when loading is forbidden
// or there is none, so a plugin's code never runs to no purpose.
template <typename Object>
Status entry_call(EntryCall<Object>& call) {
  const std::string_view key = Kind<Object>::kKey;
  Registry& r = registry();
  const MutexLock lock(r.mu);
  if (r.forbidden) return config_problem(key, "plugin", "not loaded: " + *r.forbidden);
  call = Kind<Object>::call(r.entry_points);
  if (call == nullptr) {
    return config_problem(key, "plugin", "not loaded: plugins load through the C ABI (humus_settings_from_json)");
  }
  return Status();
}

// The object made from the table, then the library its code lives in: members are destroyed in reverse, so
// the table's destroy runs while the library is still open.
template <typename Object>
struct Held {
  std::shared_ptr<Library> library;
  std::shared_ptr<const Object> object;
};

template <typename Object>
Result<std::shared_ptr<const Object>> load(const Spec& spec) {
  const std::string_view key = Kind<Object>::kKey;
  if (Status shape = check_spec(key, spec); !shape.ok()) return shape;
  EntryCall<Object> call = nullptr;
  if (Status none = entry_call<Object>(call); !none.ok()) return none;
  Result<std::shared_ptr<Library>> library = open_library(key, spec.path);
  if (!library.ok()) return library.status();

  (void)dlerror();
  void* symbol = dlsym((*library)->handle(), spec.symbol.c_str());
  if (symbol == nullptr) {
    return config_problem(key, "symbol", "not found in the plugin: " + loader_message());
  }
  Result<std::shared_ptr<const Object>> made = call(symbol, spec.config);
  if (!made.ok()) {
    const Status& why = made.status();
    if (why.code() == Code::kNoMemory) return Status(Code::kNoMemory, key_of(key, "symbol") + ": out of memory");
    std::vector<std::string> fields;
    for (const std::string& f : why.fields()) fields.push_back(key_of(key, "config." + f));
    return config_problem(key, "symbol", "the entry point " + quote_for_message(spec.symbol) + " " + why.message(),
                          std::move(fields));
  }
  try {
    auto held = std::make_shared<Held<Object>>(Held<Object>{std::move(library).value(), std::move(made).value()});
    const Object* object = held->object.get();
    return std::shared_ptr<const Object>(std::move(held), object);
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
  return load<classify::Classifier>(spec);
}

Result<std::shared_ptr<const breaker::Policy>> load_breaker_policy(const Spec& spec) {
  return load<breaker::Policy>(spec);
}

void install_entry_points(const EntryPoints& entry_points) {
  Registry& r = registry();
  const MutexLock lock(r.mu);
  r.entry_points = entry_points;
}

void forbid_loading(std::string why) {
  Registry& r = registry();
  const MutexLock lock(r.mu);
  r.forbidden = std::move(why);
}

}  // namespace humus::plugin
