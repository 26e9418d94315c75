#include "conf/tls.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace rrl {

namespace {

// the last OpenSSL error, and the queue emptied
std::string ssl_error() {
    unsigned long e = ERR_get_error();
    ERR_clear_error();
    if (e == 0) return "unknown error";
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    return buf;
}

// a file that cannot be read is named with the system's reason
void readable(const char* what, const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) {
        throw std::runtime_error(std::string("cannot read ") + what + "\"" +
                                 path + "\": " + std::strerror(errno));
    }
    std::fclose(f);
}

bool ip_address(const std::string& name) {
    unsigned char addr[16];
    return inet_pton(AF_INET, name.c_str(), addr) == 1 ||
           inet_pton(AF_INET6, name.c_str(), addr) == 1;
}

}  // namespace

Tls::Tls(const TlsFiles& files)
    : ctx_(SSL_CTX_new(TLS_client_method())), verify_(files.verify) {
    if (ctx_ == nullptr) throw std::runtime_error("no SSL context");
    try {
        SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
        if (!files.ca.empty()) {
            readable("tls_ca=", files.ca);
            if (SSL_CTX_load_verify_locations(ctx_, files.ca.c_str(),
                                              nullptr) != 1) {
                throw std::runtime_error("cannot load tls_ca=\"" + files.ca +
                                         "\": " + ssl_error());
            }
        } else if (SSL_CTX_set_default_verify_paths(ctx_) != 1) {
            throw std::runtime_error("cannot load the system's CAs: " +
                                     ssl_error());
        }
        if (!files.cert.empty()) {
            readable("tls_cert=", files.cert);
            readable("tls_key=", files.key);
            if (SSL_CTX_use_certificate_chain_file(ctx_, files.cert.c_str()) !=
                1) {
                throw std::runtime_error("cannot load tls_cert=\"" +
                                         files.cert + "\": " + ssl_error());
            }
            if (SSL_CTX_use_PrivateKey_file(ctx_, files.key.c_str(),
                                            SSL_FILETYPE_PEM) != 1 ||
                SSL_CTX_check_private_key(ctx_) != 1) {
                throw std::runtime_error("cannot use tls_key=\"" + files.key +
                                         "\": " + ssl_error());
            }
        }
        SSL_CTX_set_verify(ctx_, verify_ ? SSL_VERIFY_PEER : SSL_VERIFY_NONE,
                           nullptr);
    } catch (...) {
        SSL_CTX_free(ctx_);
        throw;
    }
}

Tls::~Tls() {
    SSL_CTX_free(ctx_);
}

SSL* Tls::connection(const std::string& name) const {
    SSL* ssl = SSL_new(ctx_);
    if (ssl == nullptr || name.empty()) return ssl;
    bool ip = ip_address(name);
    // SNI is a host name, never an address (RFC 6066)
    if (!ip) SSL_set_tlsext_host_name(ssl, name.c_str());
    if (verify_) {
        X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
        int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                    : X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0);
        if (ok != 1) {
            SSL_free(ssl);
            return nullptr;
        }
    }
    return ssl;
}

std::string Tls::why(const SSL* ssl) {
    long result = SSL_get_verify_result(ssl);
    if (result != X509_V_OK) {
        return std::string("certificate verify failed: ") +
               X509_verify_cert_error_string(result);
    }
    return "";
}

}  // namespace rrl
