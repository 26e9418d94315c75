// extern "C" of call.hpp, batch.hpp and retry.hpp (rrl_call.h).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "batch.hpp"
#include "call.hpp"
#include "capi.hpp"
#include "open_batches.hpp"
#include "retry.hpp"
#include "rrl_call.h"

struct rrl_call_s {
    rrl::Call call;
    void* data = nullptr;
};

struct rrl_batches_s {
    rrl::OpenBatches open;
};

namespace {

// A part out of range is logged and gives on_error.
template <typename R, typename F>
R on_call(R on_error, F&& body) noexcept {
    return rrl::capi::guarded("call", on_error, body);
}

// rrl_batch_t is rrl::Batch: OpenBatches makes them
rrl::Batch& B(rrl_batch_t* batch) {
    return *reinterpret_cast<rrl::Batch*>(batch);
}

const rrl::Batch& B(const rrl_batch_t* batch) {
    return *reinterpret_cast<const rrl::Batch*>(batch);
}

rrl_batch_t* handle(rrl::Batch* batch) {
    return reinterpret_cast<rrl_batch_t*>(batch);
}

}  // namespace

rrl_call_t* rrl_call_new(int argc, const char** argv, const size_t* argvlen,
                         const void* const* zones, size_t n,
                         int cluster) noexcept {
    return on_call(static_cast<rrl_call_t*>(nullptr), [&] {
        std::vector<std::string_view> args;
        for (int i = 0; i < argc; i++) args.emplace_back(argv[i], argvlen[i]);
        return new rrl_call_t{rrl::Call(
            args, std::vector<const void*>(zones, zones + n), cluster != 0)};
    });
}

void rrl_call_free(rrl_call_t* call) noexcept {
    delete call;
}

void rrl_call_set_data(rrl_call_t* call, void* data) noexcept {
    call->data = data;
}

void* rrl_call_data(const rrl_call_t* call) noexcept {
    return call->data;
}

size_t rrl_call_parts(const rrl_call_t* call) noexcept {
    return call->call.parts();
}

unsigned rrl_call_slot(const rrl_call_t* call, size_t part) noexcept {
    return on_call(0u, [&] { return call->call.slot(part); });
}

void rrl_call_set_node(rrl_call_t* call, size_t part, void* node) noexcept {
    on_call(0, [&] {
        call->call.set_node(part, node);
        return 0;
    });
}

void* rrl_call_node(const rrl_call_t* call, size_t part) noexcept {
    return on_call(static_cast<void*>(nullptr),
                   [&] { return call->call.node(part); });
}

int rrl_call_asks(const rrl_call_t* call, size_t part) noexcept {
    return on_call(0, [&] { return call->call.asks(part) ? 1 : 0; });
}

void rrl_call_set_probe(rrl_call_t* call, size_t part) noexcept {
    on_call(0, [&] {
        call->call.set_probe(part);
        return 0;
    });
}

int rrl_call_probe(const rrl_call_t* call, size_t part) noexcept {
    return on_call(0, [&] { return call->call.probe(part) ? 1 : 0; });
}

int rrl_call_out(rrl_call_t* call, size_t part) noexcept {
    return on_call(0, [&] { return call->call.out(part) ? 1 : 0; });
}

int rrl_call_awaited(const rrl_call_t* call, size_t part) noexcept {
    return on_call(0, [&] { return call->call.awaited(part) ? 1 : 0; });
}

size_t rrl_call_in_batches(const rrl_call_t* call) noexcept {
    return call->call.in_batches();
}

size_t rrl_call_answer(rrl_call_t* call, size_t part) noexcept {
    return on_call(size_t{0}, [&] { return call->call.answer(part); });
}

size_t rrl_call_pending(const rrl_call_t* call) noexcept {
    return call->call.pending();
}

int rrl_call_unsent(rrl_call_t* call, size_t part) noexcept {
    return on_call(0, [&] { return call->call.unsent(part) ? 1 : 0; });
}

size_t rrl_call_time_out(rrl_call_t* call) noexcept {
    return call->call.time_out();
}

int rrl_call_fails(rrl_call_t* call, size_t part) noexcept {
    return on_call(0, [&] { return call->call.fails(part) ? 1 : 0; });
}

void rrl_call_detach(rrl_call_t* call) noexcept {
    call->call.detach();
}

int rrl_call_probe_out(const rrl_call_t* call) noexcept {
    return call->call.probe_out() ? 1 : 0;
}

int rrl_call_probe_lost(rrl_call_t* call, size_t part) noexcept {
    return on_call(0, [&] { return call->call.probe_lost(part) ? 1 : 0; });
}

size_t rrl_call_values(const rrl_call_t* call, size_t part) noexcept {
    return on_call(size_t{0}, [&] { return call->call.values(part); });
}

int64_t* rrl_call_reply(rrl_call_t* call, size_t part) noexcept {
    return on_call(static_cast<int64_t*>(nullptr),
                   [&] { return call->call.reply(part); });
}

size_t rrl_call_merge(const rrl_call_t* call, int64_t* out,
                      size_t cap) noexcept {
    return on_call(size_t{0}, [&] { return call->call.merge(out, cap); });
}

size_t rrl_call_release(const rrl_call_t* call, size_t part, char* buf,
                        size_t size) noexcept {
    return on_call(size_t{0}, [&] {
        if (!call->call.to_release(part)) return size_t{0};
        return rrl::capi::put(call->call.release_command(part), buf, size);
    });
}

rrl_batch_t* rrl_batch_new(void) noexcept {
    return on_call(static_cast<rrl_batch_t*>(nullptr),
                   [] { return handle(new rrl::Batch); });
}

void rrl_batch_free(rrl_batch_t* batch) noexcept {
    if (batch) delete &B(batch);
}

int rrl_batch_add(rrl_batch_t* batch, rrl_call_t* call, size_t part,
                  void* data) noexcept {
    return on_call(RRL_ERROR, [&] {
        return B(batch).add(call->call, part, data) ? 1 : RRL_OK;
    });
}

void rrl_batch_remove(rrl_batch_t* batch, size_t i) noexcept {
    on_call(0, [&] {
        B(batch).remove(i);
        return 0;
    });
}

size_t rrl_batch_size(const rrl_batch_t* batch) noexcept {
    return B(batch).size();
}

void* rrl_batch_data(const rrl_batch_t* batch, size_t i) noexcept {
    return on_call(static_cast<void*>(nullptr),
                   [&] { return B(batch).data(i); });
}

size_t rrl_batch_part(const rrl_batch_t* batch, size_t i) noexcept {
    return on_call(size_t{0}, [&] { return B(batch).part(i); });
}

size_t rrl_batch_values(const rrl_batch_t* batch) noexcept {
    return B(batch).values();
}

size_t rrl_batch_share(const rrl_batch_t* batch, size_t i) noexcept {
    return on_call(size_t{0}, [&] { return B(batch).share(i); });
}

const char* rrl_batch_command(rrl_batch_t* batch, const char* sha,
                              size_t sha_len, size_t* len) noexcept {
    return on_call(static_cast<const char*>(nullptr), [&] {
        const std::string& command =
            B(batch).command(std::string_view(sha ? sha : "", sha_len));
        *len = command.size();
        return command.data();
    });
}

int rrl_batch_count(rrl_batch_t* batch) noexcept {
    return on_call(0, [&] { return B(batch).count() ? 1 : 0; });
}

void rrl_batch_resent(rrl_batch_t* batch, void* node) noexcept {
    on_call(0, [&] {
        B(batch).resent(node);
        return 0;
    });
}

void* rrl_batch_node(const rrl_batch_t* batch) noexcept {
    return B(batch).node();
}

unsigned rrl_batch_slot(const rrl_batch_t* batch) noexcept {
    return B(batch).slot();
}

int64_t rrl_batch_sent(const rrl_batch_t* batch) noexcept {
    return B(batch).sent;
}

void rrl_batch_set_sent(rrl_batch_t* batch, int64_t sent) noexcept {
    B(batch).sent = sent;
}

static int retry_code(rrl::RetryAction action) noexcept {
    switch (action) {
        case rrl::RetryAction::load_script:
            return RRL_RETRY_LOAD_SCRIPT;
        case rrl::RetryAction::redirect:
            return RRL_RETRY_REDIRECT;
        default:
            return RRL_RETRY_ANSWER;
    }
}

int rrl_batch_retry(rrl_batch_t* batch, int kind) noexcept {
    return retry_code(B(batch).retry(kind));
}

rrl_batches_t* rrl_batches_new(void) noexcept {
    return on_call(static_cast<rrl_batches_t*>(nullptr),
                   [] { return new rrl_batches_t; });
}

void rrl_batches_free(rrl_batches_t* batches) noexcept { delete batches; }

rrl_batch_t* rrl_batches_get(rrl_batches_t* batches, void* node,
                             unsigned slot, int* created) noexcept {
    return on_call(static_cast<rrl_batch_t*>(nullptr), [&] {
        auto [batch, made] = batches->open.get(node, slot);
        *created = made ? 1 : 0;
        return handle(batch);
    });
}

rrl_batch_t* rrl_batches_pop(rrl_batches_t* batches) noexcept {
    return handle(batches->open.pop());
}

void rrl_batches_take(rrl_batches_t* batches, rrl_batch_t* batch) noexcept {
    on_call(0, [&] {
        batches->open.take(&B(batch));
        return 0;
    });
}

int rrl_retry_action(int kind, int reloaded, int redirected) noexcept {
    return retry_code(rrl::retry_action(kind, reloaded != 0, redirected != 0));
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
