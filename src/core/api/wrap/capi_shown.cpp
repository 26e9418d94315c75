// The C API of shown.hpp.
#include <cstring>
#include <iterator>

#include "api/wrap/capi.hpp"
#include "api/rrl_shown.h"
#include "decide/shown.hpp"

using rrl::capi::guarded;
using rrl::capi::put;

size_t rrl_shown_fields(char* buf, size_t size, const rrl_shown_t* shown,
                        rrl_field_t fields[RRL_SHOWN_FIELDS],
                        size_t* n) noexcept {
    return guarded("rrl_shown_fields", size_t{0}, [&] {
        rrl::Fields f = rrl::shown_fields(*shown);
        size_t len = 0;
        for (const rrl::Field& field : f) len += field.value.size();
        if (len > size) return len;

        *n = 0;
        for (const rrl::Field& field : f) {
            std::memcpy(buf, field.value.data(), field.value.size());
            fields[(*n)++] = {field.name.data(), field.name.size(), buf,
                              field.value.size()};
            buf += field.value.size();
        }
        return len;
    });
}

const char* rrl_shown_variable_name(int variable) noexcept {
    return rrl::shown_variable_name(variable);
}

size_t rrl_shown_variable(char* buf, size_t size, int variable,
                          const rrl_shown_t* shown) noexcept {
    return guarded("rrl_shown_variable", size_t{0}, [&] {
        auto value = rrl::shown_variable(variable, *shown);
        return value ? put(*value, buf, size) : size_t{0};
    });
}

size_t rrl_shown_problem(char* buf, size_t size, unsigned status,
                         const rrl_shown_t* shown) noexcept {
    return guarded("rrl_shown_problem", size_t{0}, [&] {
        return put(rrl::shown_problem(status, *shown), buf, size);
    });
}
