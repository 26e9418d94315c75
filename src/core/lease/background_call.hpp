// A call of the script of its own on the worker's engine, in the background
// (a lease's renewal, a settlement): no request waits for it. It holds its
// arguments and its reply's integers; once made, the engine owns it until
// done() runs, once (answered, failed or timed out), and then frees it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/rrl_engine_types.h"
#include "script/call_args.hpp"

namespace rrl::engine {
class Engine;
}

namespace rrl {

class BackgroundCall {
   public:
    virtual ~BackgroundCall() = default;

    // Sends call on engine, in the turn's batches: true, made (the engine
    // owns it now, call is empty); false, not made (no connection, the
    // breaker open, too many parked), call is still the caller's. The one
    // place where lease/ reaches the engine.
    static bool send(std::unique_ptr<BackgroundCall>& call,
                     engine::Engine& engine);

   protected:
    // The arguments of limits, laid out by lay_out (call_args(),
    // settle_args()) into args_ with room for size bytes; sha: the
    // script's. zones[j] names limit j's zone; the reply holds nvalues
    // integers.
    template <typename LayOut>
    void prepare(LayOut lay_out, std::size_t size, std::string_view sha,
                 const CallLimit* limits, const void* const* zones,
                 std::size_t n, std::size_t nvalues) {
        // the views into args_ stay valid: it never grows past this
        args_.reserve(size + sha.size());
        CallArgs args = lay_out(sha, limits, n, args_);
        argv_.clear();
        argvlen_.clear();
        for (std::string_view a : args) {
            argv_.push_back(a.data());
            argvlen_.push_back(a.size());
        }
        zones_.assign(zones, zones + n);
        values_.assign(nvalues, 0);
    }

    // the engine's report: result_ and values_ are written
    virtual void done() = 0;

    std::string args_;
    std::vector<const char*> argv_;
    std::vector<std::size_t> argvlen_;
    std::vector<const void*> zones_;
    std::vector<std::int64_t> values_;
    rrl_engine_result_t result_{};

   private:
    static void on_done(void* request, void* data);
};

}  // namespace rrl
