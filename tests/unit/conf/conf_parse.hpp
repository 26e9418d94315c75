// The configuration tests' parse(): a directive's words given to its
// parser one at a time, as the shim gives them, then its cross-checks.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "conf/conf_word.hpp"

namespace rrl_test {

// A word parser returns a ConfWord (error and host) or only an error.
inline const std::string& word_error(const rrl::ConfWord& r) {
    return r.error;
}
inline const std::string& word_error(const std::string& error) {
    return error;
}
inline bool word_host(const rrl::ConfWord& r) {
    return r.host;
}
inline bool word_host(const std::string&) {
    return false;
}

// word(w) for each word, then done(): the first error, or done()'s ("" when
// the words are good). With every word good, *hosts (when given) is the
// number of words left to the host to finish (addresses, variables).
template <typename Word, typename Done, typename Count = std::size_t>
std::string parse_words(const std::vector<std::string_view>& words, Word word,
                        Done done, Count* hosts = nullptr) {
    Count host = 0;
    for (std::string_view w : words) {
        auto r = word(w);
        if (!word_error(r).empty()) return word_error(r);
        if (word_host(r)) host++;
    }
    if (hosts) *hosts = host;
    return done();
}

}  // namespace rrl_test
