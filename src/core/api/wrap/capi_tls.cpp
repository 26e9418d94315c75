// The C API of TLS (rrl_tls.h, and rrl_conf.h's rrl_server_tls()): no
// exception crosses into nginx.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "api/wrap/capi.hpp"
#include "api/rrl_conf.h"
#include "api/rrl_tls.h"
#include "conf/tls.hpp"

namespace {

// a file of the configuration: absolute, or under nginx's conf prefix
std::string full_name(const rrl_conf_str_t& name, const char* prefix,
                      size_t prefix_len) {
    if (name.len == 0) return "";
    std::string file(name.data, name.len);
    return file[0] == '/' ? file : std::string(prefix, prefix_len) + file;
}

// files made in make() (which may throw), Tls's error cut into why
template <typename Make>
rrl_tls_t* tls_new(Make make, char* why, size_t size) noexcept {
    std::string error;
    rrl_tls_t* tls = nullptr;
    try {
        tls = new rrl_tls_t(make());
    } catch (const std::exception& e) {
        error = e.what();
    } catch (...) {
        error = "unknown error";
    }
    if (tls == nullptr && size > 0) {
        size_t n = std::min(error.size(), size - 1);
        std::memcpy(why, error.data(), n);
        why[n] = '\0';
    }
    return tls;
}

}  // namespace

extern "C" {

rrl_tls_t* rrl_server_tls(const rrl_server_conf_t* sc, const char* prefix,
                          size_t prefix_len, char* why, size_t size) noexcept {
    return tls_new(
        [&] {
            rrl::TlsFiles files;
            files.ca = full_name(sc->tls_ca, prefix, prefix_len);
            files.cert = full_name(sc->tls_cert, prefix, prefix_len);
            files.key = full_name(sc->tls_key, prefix, prefix_len);
            files.verify = sc->tls_verify != 0;
            return files;
        },
        why, size);
}

void rrl_tls_free(void* tls) noexcept {
    delete static_cast<rrl_tls_t*>(tls);
}

}  // extern "C"
