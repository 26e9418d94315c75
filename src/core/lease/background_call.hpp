// A call of the script of its own on the worker's engine, in the background
// (a lease's renewal, a settlement): no request waits for it. It holds its
// limits until sent, and its reply's integers; once made, the engine owns it until
// done() runs, once (answered, failed or timed out), and then frees it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
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
    // The call of limits (n) in form, as Call's constructor takes them;
    // sha: the script's; zones[j] names limit j's zone; the reply holds
    // nvalues integers. The limits' views (keys, zone names) must live
    // until send(): the engine copies what it keeps.
    void prepare(std::string_view sha, std::string_view form,
                 const CallLimit* limits, const void* const* zones,
                 std::size_t n, std::size_t nvalues) {
        sha_.assign(sha);
        form_ = form;
        call_limits_.assign(limits, limits + n);
        zones_.assign(zones, zones + n);
        values_.assign(nvalues, 0);
    }

    // the engine's report: result_ and values_ are written
    virtual void done() = 0;

    std::string sha_;
    std::string_view form_;  // static: "" or kSettleForm
    std::vector<CallLimit> call_limits_;
    std::vector<const void*> zones_;
    std::vector<std::int64_t> values_;
    rrl_engine_result_t result_{};

   private:
    static void on_done(void* request, void* data);
};

}  // namespace rrl
