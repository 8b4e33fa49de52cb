#include "urls.h"

#include <algorithm>

namespace humus::cli {

std::string shown_url(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return url;
  const size_t authority_end = url.find_first_of("/?#", scheme_end + 3);
  const size_t at = url.rfind('@', authority_end == std::string::npos ? url.size() : authority_end);
  if (at == std::string::npos || at < scheme_end + 3) return url;
  return url.substr(0, scheme_end + 3) + "***" + url.substr(at);
}

std::string origin_of(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return url;
  return url.substr(0, url.find_first_of("/?#", scheme_end + 3));
}

std::string remote_name_of(const std::string& url) {
  const size_t scheme_end = url.find("://");
  const size_t path = url.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
  if (path == std::string::npos) return "";
  std::string p = url.substr(path, url.find_first_of("?#", path) - path);
  return p.substr(p.find_last_of('/') + 1);
}

std::string with_query(const std::string& url, const std::string& data) {
  const size_t hash = url.find('#');
  std::string base = url.substr(0, hash);
  if (!data.empty()) {
    base += (base.find('?') == std::string::npos ? "?" : (base.back() == '?' ? "" : "&")) + data;
  }
  return base + (hash == std::string::npos ? "" : url.substr(hash));
}

std::string upload_url(const std::string& url, const std::string& file) {
  if (file == "-") return url;
  const std::string name = file.substr(file.find_last_of('/') + 1);
  const size_t scheme_end = url.find("://");
  const size_t authority = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  const size_t path_end = std::min(url.find_first_of("?#", authority), url.size());
  const size_t path = url.find('/', authority);
  if (path == std::string::npos || path >= path_end)
    return url.substr(0, path_end) + "/" + name + url.substr(path_end);
  if (url[path_end - 1] != '/') return url;
  return url.substr(0, path_end) + name + url.substr(path_end);
}

}  // namespace humus::cli
