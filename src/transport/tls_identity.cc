#include "transport/tls_identity.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>
#include <string>

namespace humus::transport {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

std::unique_ptr<BIO, BioFree> memory_bio(std::string_view pem) {
  return std::unique_ptr<BIO, BioFree>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

}  // namespace

Status check_client_identity(std::string_view cert_pem, std::string_view key_pem, std::string_view cert_key,
                             std::string_view key_key) {
  const std::string cert_name(cert_key), key_name(key_key);
  auto cert_bio = memory_bio(cert_pem);
  std::unique_ptr<X509, X509Free> cert(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  if (!cert) {
    ERR_clear_error();
    return Status(Code::kConfig, cert_name + ": the client certificate is not a PEM certificate", {cert_name});
  }
  auto key_bio = memory_bio(key_pem);
  std::unique_ptr<EVP_PKEY, KeyFree> key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (!key) {
    ERR_clear_error();
    return Status(Code::kConfig, key_name + ": the client key is not a PEM private key (or is encrypted)",
                  {key_name});
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return Status(Code::kConfig, cert_name + ", " + key_name + ": the client certificate does not match its key",
                  {cert_name, key_name});
  }
  return Status();
}

}  // namespace humus::transport
