#include "request_body.h"

#include <strings.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <system_error>
#include <vector>

#include "exit_codes.h"

namespace humus::cli {
namespace {

// curl's --data-urlencode: every byte but the unreserved ones as %XX.
std::string url_encoded(const std::string& s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  return out;
}

// The data: every -d / --data-binary / --data-urlencode joined with '&' as curl does; --json pieces as given.
std::optional<Outcome> body_of(const FetchOptions& o, std::string& body) {
  for (size_t i = 0; i < o.data.size(); ++i) {
    const DataPiece& piece = o.data[i];
    std::string bytes = piece.text;
    if (piece.from_file) {
      std::string why;
      if (!read_file(piece.text, bytes, why))
        return Outcome{exit_code::kRead, piece.flag + " @" + piece.text + ": " + why};
      if (piece.strip_newlines) std::erase_if(bytes, [](char c) { return c == '\r' || c == '\n'; });
    }
    if (piece.kind == DataPiece::Kind::kUrlencode)
      bytes = (piece.has_name ? piece.name + "=" : "") + url_encoded(bytes);
    if (i > 0 && piece.kind != DataPiece::Kind::kJson) body += '&';
    body += bytes;
  }
  return std::nullopt;
}

// curl's guesses from a file name's extension; application/octet-stream otherwise.
std::string content_type_of(const std::string& file) {
  static const std::pair<const char*, const char*> kTypes[] = {
      {".txt", "text/plain"},       {".html", "text/html"},        {".htm", "text/html"},
      {".css", "text/css"},         {".csv", "text/csv"},          {".json", "application/json"},
      {".xml", "application/xml"},  {".pdf", "application/pdf"},   {".zip", "application/zip"},
      {".png", "image/png"},        {".jpg", "image/jpeg"},        {".jpeg", "image/jpeg"},
      {".gif", "image/gif"},        {".svg", "image/svg+xml"},     {".js", "application/javascript"}};
  for (const auto& [ext, type] : kTypes) {
    const size_t n = std::strlen(ext);
    if (file.size() > n && strcasecmp(file.c_str() + file.size() - n, ext) == 0) return type;
  }
  return "application/octet-stream";
}

// -F's parts as multipart/form-data (RFC 7578); `boundary` is chosen to appear in none of them.
std::optional<Outcome> form_body(const FetchOptions& o, std::string& body, std::string& boundary) {
  struct Part {
    std::string headers;
    std::string bytes;
  };
  std::vector<Part> parts;
  for (const FormPart& f : o.form) {
    Part part;
    part.bytes = f.value;
    if (f.from_file) {
      std::string why;
      if (!read_file(f.value, part.bytes, why))
        return Outcome{exit_code::kRead,
                       "-F " + f.name + "=" + (f.upload ? "@" : "<") + f.value + ": " + why};
    }
    part.headers = "Content-Disposition: form-data; name=\"" + f.name + "\"";
    if (f.upload) {
      std::string filename = f.filename.value_or(f.value == "-" ? std::string() : f.value);
      if (!f.filename) filename = filename.substr(filename.find_last_of('/') + 1);
      if (!filename.empty()) part.headers += "; filename=\"" + filename + "\"";
      part.headers += "\r\nContent-Type: " + f.type.value_or(content_type_of(filename));
    } else if (f.type) {
      part.headers += "\r\nContent-Type: " + *f.type;
    }
    parts.push_back(std::move(part));
  }
  std::random_device seed;
  std::mt19937_64 random(seed());
  for (;;) {
    char hex[33];
    std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(random()),
                  static_cast<unsigned long long>(random()));
    boundary = std::string("------------------------") + hex;
    if (std::none_of(parts.begin(), parts.end(),
                     [&](const Part& p) { return p.bytes.find(boundary) != std::string::npos; }))
      break;
  }
  for (const Part& p : parts) body += "--" + boundary + "\r\n" + p.headers + "\r\n\r\n" + p.bytes + "\r\n";
  body += "--" + boundary + "--\r\n";
  return std::nullopt;
}

}  // namespace

// Reads FILE whole ("-" is stdin); false with the reason.
bool read_file(const std::string& name, std::string& out, std::string& why) {
  if (name == "-") {
    out.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    if (std::cin.bad()) {
      why = "cannot read stdin";
      return false;
    }
    return true;
  }
  std::ifstream in(name, std::ios::binary);
  if (!in) {
    const int error = errno;
    why = "cannot read " + name + ": " + std::generic_category().message(error);
    return false;
  }
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) {
    const int error = errno;
    why = "cannot read " + name + ": " + std::generic_category().message(error);
    return false;
  }
  return true;
}

std::optional<Outcome> request_body(const FetchOptions& o, std::string& body, std::string& boundary) {
  return o.form.empty() ? body_of(o, body) : form_body(o, body, boundary);
}

}  // namespace humus::cli
