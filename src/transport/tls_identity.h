// A client certificate and its key (mTLS), checked when the client is built: a certificate that is not PEM,
// a key that is not PEM, or a key that is not the certificate's fails there, as the operator's mistake it is,
// rather than at the first call, where it would count against a healthy dependency.
#pragma once

#include <string_view>

#include "common/status.h"

namespace humus::transport {

// Code::kConfig naming `cert_key` / `key_key` (the settings keys the PEM came from).
Status check_client_identity(std::string_view cert_pem, std::string_view key_pem, std::string_view cert_key,
                             std::string_view key_key);

}  // namespace humus::transport
