#include "lease/background_call.hpp"

#include "base/guard.hpp"
#include "engine/engine.hpp"

namespace rrl {

bool BackgroundCall::send(std::unique_ptr<BackgroundCall>& call,
                          engine::Engine& engine) {
    BackgroundCall& c = *call;
    c.result_ = {};
    c.result_.values = c.values_.data();
    c.result_.capacity = c.values_.size();

    // an exception in the engine is a call not made, as no memory is
    rrl_engine_call_t* made =
        guarded("a call", (rrl_engine_call_t*)nullptr, [&] {
            return engine.call(c.sha_, c.form_, c.call_limits_.data(),
                               c.zones_.data(), c.zones_.size(), &c.result_,
                               on_done, &c, &c);
        });
    if (made == nullptr) return false;
    call.release();
    return true;
}

void BackgroundCall::on_done(void*, void* data) {
    std::unique_ptr<BackgroundCall> call(static_cast<BackgroundCall*>(data));
    call->done();
}

}  // namespace rrl
