// TLS to Redis: one OpenSSL context a configuration (the CAs, a client
// certificate, whether peers are verified), built when nginx reads its
// configuration; an SSL object a connection, with SNI and the name its
// certificate must carry. hiredis (>= 1.0, hiredis_ssl) runs the handshake.
#pragma once

#include <openssl/ssl.h>

#include <string>

namespace rrl {

struct TlsFiles {
    std::string ca;    // "": the system's CAs
    std::string cert;  // with key: a client certificate; "": none
    std::string key;
    bool verify = true;
};

class Tls {
   public:
    // throws std::runtime_error naming the file that cannot be used
    explicit Tls(const TlsFiles& files);
    ~Tls();
    Tls(const Tls&) = delete;
    Tls& operator=(const Tls&) = delete;

    // A connection's SSL object (the caller's to free, or hiredis's once
    // given to it); name: SNI unless an IP address, and checked when
    // verifying. nullptr: no memory.
    SSL* connection(const std::string& name) const;

    bool verify() const { return verify_; }

    // why a connection's handshake failed, as far as OpenSSL knows
    static std::string why(const SSL* ssl);

   private:
    SSL_CTX* ctx_;
    bool verify_;
};

}  // namespace rrl

// rrl_tls.h's handle
struct rrl_tls_s {
    rrl::Tls tls;
    explicit rrl_tls_s(const rrl::TlsFiles& files) : tls(files) {}
};
