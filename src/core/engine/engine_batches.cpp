// The batches of the engine's script calls. A part joins the open batch
// (Batch) of its node and slot; the batches open are sent when the
// turn of the event loop ends, or one at once when full. A batch keeps its
// command, sent again after NOSCRIPT, MOVED or ASK, when the requests'
// arguments may be gone. Its entries' data: their engine calls.
#include <algorithm>
#include <cstdio>
#include <new>
#include <string>

#include "base/guard.hpp"
#include "engine/engine.hpp"
#include "topology/redis_errors.hpp"
#include "script/key.hpp"
#include "metrics/metrics.hpp"
#include "metrics/metrics_count.hpp"
#include "engine/retry.hpp"
#include "script/script.hpp"

namespace rrl::engine {

namespace {

Node* batch_node(const Batch* batch) {
    return static_cast<Node*>(batch->node());
}

rrl_engine_call_t* entry_call(const Batch* batch, size_t i) {
    return static_cast<rrl_engine_call_t*>(batch->data(i));
}

// the kind of an error reply's text: RRL_REPLY_*
int error_kind(const redisReply* rr) {
    return rrl::error_kind(std::string_view(rr->str, rr->len));
}

// A script call's reply (nullptr: lost), sent at sent, for the metrics:
// its round trip's bucket (RRL_METRICS_BUCKETS: not timed) and the error
// kind it counts as (-1: none, the script answered).
void report(const rrl_loop_t& loop, int64_t sent, const redisReply* rr) {
    size_t bucket = RRL_METRICS_BUCKETS;
    uint64_t rtt_us = 0;
    if (rr != nullptr) {
        if (auto rtt = metrics_rtt(sent, loop.clock())) {
            rtt_us = *rtt;
            bucket = metrics_bucket(rtt_us);
        }
    }
    std::optional<std::string_view> error;
    if (rr != nullptr && rr->type == REDIS_REPLY_ERROR) {
        error = std::string_view(rr->str, rr->len);
    }
    int kind = metrics_reply_error(rr != nullptr,
                                   rr && rr->type == REDIS_REPLY_ARRAY, error)
                   .value_or(-1);
    loop.reply(bucket, rtt_us, kind);
}

}  // namespace

Batches::Batches(Engine& engine)
    : engine_(engine), flush_(engine.loop, on_flush, this, false) {}

Batches::~Batches() {
    // the batches still open, with their calls' parts, go with open_
}

// Adds the part to the open batch of its node and slot, or to a new one;
// the batches are sent when the turn of the event loop ends (a posted
// event runs after the others), or at once when full.
bool Batches::add(rrl_engine_call_t* call, size_t part) {
    Call& parts = *call->parts;
    auto* node = static_cast<Node*>(parts.node(part));
    // no memory: logged, the part is not sent
    std::pair<Batch*, bool> opened =
        guarded("call", std::pair<Batch*, bool>(nullptr, false),
                      [&] { return open_.get(node, parts.slot(part)); });
    Batch* batch = opened.first;
    bool created = opened.second;
    if (batch == nullptr) {
        part_unsent(call, part);
        return false;
    }
    if (created) {
        node->batches++;
        flush_.post();
    }
    int full = guarded(
        "call", -1, [&] { return batch->add(parts, part, call) ? 1 : 0; });
    if (full < 0) {
        part_unsent(call, part);
        return false;
    }
    if (full) {
        open_.take(batch);
        send(batch);
    }
    return true;
}

void Batches::on_flush(void* arg) {
    static_cast<Batches*>(arg)->flush();
}

void Batches::flush() {
    while (Batch* batch = open_.pop()) send(batch);
    // write now rather than after the other posted events (responses to
    // clients, mostly): Redis runs the batches while the worker writes
    // them; a failed write may free a context, never a node
    for (Node& node : engine_.nodes.all()) {
        if (node.conn) engine_.loop.flush(node.conn);
    }
}

// The batch is the caller's (out of the open ones): sent, or freed here.
void Batches::send(Batch* batch) {
    Node* node = batch_node(batch);
    // out of the open batches: the node may only be waited on now
    node->batches--;

    // a request gone (or timed out) in the meantime is not sent
    for (size_t i = 0; i < batch->size();) {
        rrl_engine_call_t* call = entry_call(batch, i);
        size_t part = batch->part(i);
        if (call->parts->awaited(part)) {
            i++;
            continue;
        }
        part_unsent(call, part);
        batch->remove(i);
        (void)part_out(call, part);
    }
    if (batch->size() == 0) {
        delete batch;
        return;
    }
    if (node->ac == nullptr) {
        unsent(batch, true);
        fail(batch, "no connection");
        return;
    }
    const std::string* command =
        guarded("call", static_cast<const std::string*>(nullptr),
                      [&] { return &batch->command(engine_.sha); });
    if (command == nullptr) {
        unsent(batch, false);
        fail(batch, "no memory");
        return;
    }
    if (node->command(on_reply, batch, command->data(), command->size())) {
        batch->sent = engine_.loop.clock();
        node->in_flight++;
        return;
    }
    unsent(batch, true);
    fail(batch, std::string("cannot send: ") +
                    ((node->ac && node->ac->errstr[0]) ? node->ac->errstr
                                                       : "closing"));
}

void Batches::on_reply(redisAsyncContext* ac, void* reply, void* privdata) {
    guarded("a reply", 0, [&] {
        auto* batch = static_cast<Batch*>(privdata);
        auto* rr = static_cast<const redisReply*>(reply);
        Node* node = batch_node(batch);
        Batches& self = node->engine.batches;
        (void)ac;

        report(node->engine.loop, batch->sent, rr);

        int kind = (rr != nullptr && rr->type == REDIS_REPLY_ERROR)
                       ? error_kind(rr)
                       : RRL_REPLY_ERROR;
        if (batch->count()) {
            node->outcome(retry_counts_ok(
                rr != nullptr, rr && rr->type == REDIS_REPLY_ARRAY, kind));
        }
        node->in_flight--;

        switch (batch->retry(kind)) {
            case RetryAction::load_script: {
                // Redis lost the script (restart, SCRIPT FLUSH); it did not run
                std::string_view text = script();
                const char* argv[] = {"SCRIPT", "LOAD", text.data()};
                const size_t argvlen[] = {6, 4, text.size()};
                if (node->command_argv(nullptr, nullptr, 3, argv, argvlen) &&
                    self.resend(batch, node)) {
                    return 0;
                }
                break;
            }
            case RetryAction::redirect:
                if (self.redirect(batch, rr, kind)) {
                    node->idle();
                    return 0;
                }
                break;
            default:
                break;
        }
        self.answer(batch, rr);
        node->idle();
        return 0;
    });
}

bool Batches::resend(Batch* batch, Node* node) {
    // built once: given back as it was sent
    const std::string& command = batch->command({});
    if (!node->command(on_reply, batch, command.data(), command.size())) {
        return false;
    }
    batch->sent = engine_.loop.clock();
    node->in_flight++;
    // counted anew; a probe was the first node's: its reply ended it
    batch->resent(node);
    return true;
}

// MOVED or ASK of the batch's slot: the engine names the node it goes to
// now; after ASK (the keys are being migrated), after ASKING.
bool Batches::redirect(Batch* batch, const redisReply* rr, int kind) {
    auto target = parse_redirect(std::string_view(rr->str, rr->len));
    if (!target || target->slot != batch->slot()) return false;
    Node* node =
        engine_.redirect(batch_node(batch), kind, target->slot,
                         target->target.host.c_str(), target->target.port);
    if (node == nullptr) return false;
    if (kind == RRL_REPLY_ASK) {
        const char* argv[] = {"ASKING"};
        const size_t argvlen[] = {6};
        if (!node->command_argv(nullptr, nullptr, 1, argv, argvlen)) {
            return false;
        }
    }
    return resend(batch, node);
}

// each part waiting gets its request's share of the reply; frees the batch
void Batches::answer(Batch* batch, const redisReply* rr) {
    if (rr == nullptr) {
        fail(batch, "connection lost");
        return;
    }
    if (rr->type == REDIS_REPLY_ERROR) {
        engine_.ask(retry_ask(error_kind(rr)));
        // escaped: a hostile server must not forge log lines
        fail(batch, printable(std::string_view(rr->str, rr->len), 128));
        return;
    }
    if (rr->type != REDIS_REPLY_ARRAY || rr->elements != batch->values()) {
        fail(batch, "unexpected reply type " + std::to_string(rr->type));
        return;
    }
    for (size_t i = 0; i < rr->elements; i++) {
        if (rr->element[i]->type != REDIS_REPLY_INTEGER) {
            fail(batch, "unexpected element type " +
                            std::to_string(rr->element[i]->type));
            return;
        }
    }
    parts(batch, rr, nullptr, 0);
}

// every part waiting fails, the first failure telling; frees the batch
void Batches::fail(Batch* batch, const std::string& why) {
    parts(batch, nullptr, why.data(), std::min<size_t>(why.size(), 128));
}

// each part waiting is answered: its share of rr, or error; then freed
void Batches::parts(Batch* batch, const redisReply* rr, const char* error,
                    size_t len) {
    for (size_t i = 0; i < batch->size(); i++) {
        rrl_engine_call_t* call = entry_call(batch, i);
        size_t part = batch->part(i);
        if (!part_out(call, part)) continue;
        if (rr) {
            size_t k = batch->share(i);
            size_t n = call->parts->values(part);
            int64_t* values = call->parts->reply(part);
            for (size_t j = 0; j < n; j++) {
                values[j] = rr->element[k + j]->integer;
            }
        }
        engine_.answered(call, part, error, len);
    }
    delete batch;
}

// A batch that cannot be sent: a failure of its node when the node is at
// fault (no connection, a write refused), once; else its probes abandoned.
void Batches::unsent(Batch* batch, bool failed) {
    if (failed) {
        engine_.loop.error(RRL_METRICS_ERR_CONNECTION);
        if (batch->count()) batch_node(batch)->outcome(false);
        return;
    }
    for (size_t i = 0; i < batch->size(); i++) {
        part_unsent(entry_call(batch, i), batch->part(i));
    }
}

// Takes the part out of its batch. false: nobody waits for it any more, as
// its request went away or timed out; the engine may free its call.
bool Batches::part_out(rrl_engine_call_t* call, size_t part) {
    if (call->parts->out(part)) return true;
    engine_.out(call);
    return false;
}

// A part that is not sent: the probe it holds, if the breaker has not seen
// its outcome, is abandoned (the next call probes).
void Batches::part_unsent(rrl_engine_call_t* call, size_t part) {
    if (call->parts->unsent(part)) {
        static_cast<Node*>(call->parts->node(part))->abandon();
    }
}

}  // namespace rrl::engine
