#pragma once
// The URL as the command line gives it: what may be printed of it, and what -O, -G and -T make of it.

#include <string>

namespace humus::cli {

// The URL as it may be printed: a user and password in it become "***" (they are never echoed).
std::string shown_url(const std::string& url);
// scheme://host[:port] of an absolute URL: the client's origin (docs/origin.md §2). The library checks the
// rest.
std::string origin_of(const std::string& url);
// The URL's last path segment, for -O; empty when it has none.
std::string remote_name_of(const std::string& url);
// -G: the data after the URL's query (or as its query), before any fragment.
std::string with_query(const std::string& url, const std::string& data);
// -T FILE to a URL whose path ends in '/' (or is empty): FILE's name is appended, as curl does.
std::string upload_url(const std::string& url, const std::string& file);

}  // namespace humus::cli
