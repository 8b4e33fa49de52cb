// The response head as the transport hands it on (docs/transport.md §10.5): what libcurl passes through from a server
// is made safe to give to callers, who may copy fields into requests or logs of their own.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace humus::transport {

// A response field's name or value with each CR, LF and NUL replaced by a space, as RFC 9110 §5.5 allows a
// recipient to do instead of rejecting the message. libcurl ends a header line at LF only, so a bare CR (or
// a NUL) inside a line reaches the header callback; passed on as is, it would let a server split a header
// that a caller forwards (response splitting).
std::string field_text(std::string_view text);

// The most of a status line's reason phrase the client keeps (docs/transport.md §10.7): a real one is a few words.
inline constexpr size_t kMaxReasonPhrase = 256;

// The reason phrase of a status line, `text` being what follows the status code's separating space: its first
// kMaxReasonPhrase bytes, each control byte (C0, HTAB included, and DEL) replaced by a space. Other bytes pass as
// sent, as a field value's do (obs-text, which need not be UTF-8).
std::string reason_text(std::string_view text);

}  // namespace humus::transport
