// The C API of TLS (rrl_tls.h): no exception crosses into nginx.
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "capi.hpp"
#include "rrl_tls.h"
#include "tls.hpp"

extern "C" {

rrl_tls_t* rrl_tls_new(const char* ca, const char* cert, const char* key,
                       int verify, char* why, size_t size) noexcept {
    std::string error;
    rrl_tls_t* tls = nullptr;
    try {
        rrl::TlsFiles files;
        files.ca = ca ? ca : "";
        files.cert = cert ? cert : "";
        files.key = key ? key : "";
        files.verify = verify != 0;
        tls = new rrl_tls_t(files);
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

void rrl_tls_free(rrl_tls_t* tls) noexcept {
    delete tls;
}

}  // extern "C"
