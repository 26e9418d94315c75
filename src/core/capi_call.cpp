// extern "C" of call_plan.hpp, batch.hpp and retry.hpp (rrl_call.h).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "batch.hpp"
#include "call_plan.hpp"
#include "capi.hpp"
#include "retry.hpp"
#include "rrl_call.h"

struct rrl_call_plan_s {
    rrl::CallPlan plan;
};

struct rrl_batch_s {
    rrl::Batch batch;
};

using rrl::capi::guarded;

rrl_call_plan_t* rrl_call_plan_new(int argc, const char** argv,
                                   const size_t* argvlen,
                                   const void* const* zones, size_t n,
                                   int cluster) noexcept {
    return guarded("call plan", static_cast<rrl_call_plan_t*>(nullptr), [&] {
        std::vector<std::string_view> args;
        for (int i = 0; i < argc; i++) args.emplace_back(argv[i], argvlen[i]);
        return new rrl_call_plan_t{rrl::CallPlan(
            args, std::vector<const void*>(zones, zones + n), cluster != 0)};
    });
}

void rrl_call_plan_free(rrl_call_plan_t* plan) noexcept {
    delete plan;
}

size_t rrl_call_plan_parts(const rrl_call_plan_t* plan) noexcept {
    return plan->plan.parts();
}

unsigned rrl_call_plan_slot(const rrl_call_plan_t* plan, size_t part) noexcept {
    return guarded("call plan", 0u, [&] { return plan->plan.slot(part); });
}

size_t rrl_call_plan_values(const rrl_call_plan_t* plan, size_t part) noexcept {
    return guarded("call plan", size_t{0},
                   [&] { return plan->plan.values(part); });
}

int64_t* rrl_call_plan_reply(rrl_call_plan_t* plan, size_t part) noexcept {
    return guarded("call plan", static_cast<int64_t*>(nullptr),
                   [&] { return plan->plan.reply(part); });
}

size_t rrl_call_plan_merge(const rrl_call_plan_t* plan, int64_t* out,
                           size_t cap) noexcept {
    return guarded("call plan", size_t{0},
                   [&] { return plan->plan.merge(out, cap); });
}

size_t rrl_call_plan_release(const rrl_call_plan_t* plan, size_t part,
                             char* buf, size_t size) noexcept {
    return guarded("call plan", size_t{0}, [&] {
        if (!plan->plan.to_release(part)) return size_t{0};
        return rrl::capi::put(plan->plan.release_command(part), buf, size);
    });
}

rrl_batch_t* rrl_batch_new(void) noexcept {
    return guarded("batch", static_cast<rrl_batch_t*>(nullptr),
                   [] { return new rrl_batch_t; });
}

void rrl_batch_free(rrl_batch_t* batch) noexcept {
    delete batch;
}

int rrl_batch_add(rrl_batch_t* batch, const rrl_call_plan_t* plan, size_t part,
                  void* data) noexcept {
    return guarded("batch", RRL_ERROR, [&] {
        return batch->batch.add(plan->plan, part, data) ? 1 : RRL_OK;
    });
}

void rrl_batch_remove(rrl_batch_t* batch, size_t i) noexcept {
    guarded("batch", 0, [&] {
        batch->batch.remove(i);
        return 0;
    });
}

size_t rrl_batch_size(const rrl_batch_t* batch) noexcept {
    return batch->batch.size();
}

void* rrl_batch_data(const rrl_batch_t* batch, size_t i) noexcept {
    return guarded("batch", static_cast<void*>(nullptr),
                   [&] { return batch->batch.data(i); });
}

size_t rrl_batch_values(const rrl_batch_t* batch) noexcept {
    return batch->batch.values();
}

size_t rrl_batch_share(const rrl_batch_t* batch, size_t i) noexcept {
    return guarded("batch", size_t{0}, [&] { return batch->batch.share(i); });
}

const char* rrl_batch_command(rrl_batch_t* batch, const char* sha,
                              size_t sha_len, size_t* len) noexcept {
    return guarded("batch", static_cast<const char*>(nullptr), [&] {
        const std::string& command = batch->batch.command({sha, sha_len});
        *len = command.size();
        return command.data();
    });
}

int rrl_retry_action(int kind, int reloaded, int redirected) noexcept {
    switch (rrl::retry_action(kind, reloaded != 0, redirected != 0)) {
        case rrl::RetryAction::load_script:
            return RRL_RETRY_LOAD_SCRIPT;
        case rrl::RetryAction::redirect:
            return RRL_RETRY_REDIRECT;
        default:
            return RRL_RETRY_ANSWER;
    }
}

int rrl_retry_counts_ok(int replied, int array, int kind) noexcept {
    return rrl::retry_counts_ok(replied != 0, array != 0, kind) ? 1 : 0;
}

int rrl_retry_ask(int kind) noexcept {
    switch (rrl::retry_ask(kind)) {
        case rrl::RetryAsk::sentinel:
            return RRL_RETRY_ASK_SENTINEL;
        case rrl::RetryAsk::cluster:
            return RRL_RETRY_ASK_CLUSTER;
        default:
            return RRL_RETRY_ASK_NOBODY;
    }
}
