// Shared by the fuzz targets: an invariant check that aborts (so libFuzzer
// records the input), and a silent core logger.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "api/rrl.h"

#define FUZZ_CHECK(cond)                                                  \
    do {                                                                  \
        if (!(cond)) {                                                    \
            std::fprintf(stderr, "%s:%d: invariant failed: %s\n",         \
                         __FILE__, __LINE__, #cond);                      \
            std::abort();                                                 \
        }                                                                 \
    } while (0)

// On the harness's own checking loops: their comparisons are not paths
// through the core, and tracing them costs most of the time.
#define FUZZ_NO_COVERAGE __attribute__((no_sanitize("coverage")))

namespace fuzz {

inline void quiet_logger(void*, int, const char*) {}

// The core logs rejected input; keep the fuzzer's output readable.
inline int silence_core() {
    rrl_set_logger(quiet_logger, nullptr);
    return 0;
}

}  // namespace fuzz
