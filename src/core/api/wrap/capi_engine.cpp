// The C API of the engine (rrl_engine.h): no exception crosses into nginx.
#include <stdexcept>

#include "api/wrap/capi.hpp"
#include "api/wrap/capi_request.hpp"
#include "engine/engine.hpp"
#include "script/call_args.hpp"

using rrl::capi::guarded;
using rrl::engine::Engine;

struct rrl_engine_s {
    Engine engine;
    rrl_engine_s(const rrl_engine_conf_t& conf, const rrl_loop_t& loop)
        : engine(conf, loop) {}
};

rrl::engine::Engine& rrl::capi::engine_of(rrl_engine_t* engine) noexcept {
    return engine->engine;
}

extern "C" {

rrl_engine_t* rrl_engine_new(const rrl_engine_conf_t* conf,
                             const rrl_loop_t* loop) noexcept {
    return guarded("the engine", (rrl_engine_t*)nullptr, [&] {
        if (loop->event_size > rrl::engine::Event::kRoom) {
            throw std::length_error("an event too large");
        }
        return new rrl_engine_t(*conf, *loop);
    });
}

void rrl_engine_free(rrl_engine_t* engine) noexcept {
    guarded("the engine's end", 0, [&] {
        delete engine;
        return 0;
    });
}

rrl_engine_call_t* rrl_engine_call(rrl_engine_t* engine, const char* sha,
                                   size_t sha_len, rrl_request_t* request,
                                   rrl_engine_done_pt done, void* r,
                                   void* data) noexcept {
    return guarded("a call", (rrl_engine_call_t*)nullptr, [&] {
        rrl::Request& q = request->request;
        rrl::CallLimits l;
        if (!rrl::to_call_limits(q.limits(), q.size(), l)) {
            return (rrl_engine_call_t*)nullptr;
        }
        return engine->engine.call({sha, sha_len}, "", l.data(), q.zones(),
                                   q.size(), &q.reply(), done, r, data);
    });
}

void rrl_engine_detach(rrl_engine_call_t* call) noexcept {
    guarded("a call's end", 0, [&] {
        call->engine.detach(call);
        return 0;
    });
}

void rrl_engine_gauges(const rrl_engine_t* engine, rrl_metrics_t* m) noexcept {
    engine->engine.gauges(m);
}

}  // extern "C"
