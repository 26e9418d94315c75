// The batches of the engine's script calls. A part joins the open batch
// (rrl_batch_t) of its node and slot; the batches open are sent when the
// turn of the event loop ends, or one at once when full. A batch keeps its
// command, sent again after NOSCRIPT, MOVED or ASK, when the requests'
// arguments may be gone. Its entries' data: their calls' parts.
#include <algorithm>
#include <cstdio>
#include <new>
#include <string>

#include "capi.hpp"
#include "engine.hpp"

namespace rrl::engine {

namespace {

Node* batch_node(const rrl_batch_t* batch) {
    return static_cast<Node*>(rrl_batch_node(batch));
}

}  // namespace

Batches::Batches(Engine& engine)
    : engine_(engine),
      open_(rrl_batches_new()),
      flush_(engine.loop, on_flush, this, false) {
    if (open_ == nullptr) throw std::bad_alloc();
}

Batches::~Batches() {
    rrl_batches_free(open_);
}

// Adds the part to the open batch of its node and slot, or to a new one;
// the batches are sent when the turn of the event loop ends (a posted
// event runs after the others), or at once when full.
bool Batches::add(rrl_call_t* parts, size_t part) {
    auto* node = static_cast<Node*>(rrl_call_node(parts, part));
    int created;
    rrl_batch_t* batch =
        rrl_batches_get(open_, node, rrl_call_slot(parts, part), &created);
    if (batch == nullptr) {
        part_unsent(parts, part);
        return false;
    }
    if (created) {
        node->batches++;
        flush_.post();
    }
    int rc = rrl_batch_add(batch, parts, part, parts);
    if (rc == RRL_ERROR) {
        part_unsent(parts, part);
        return false;
    }
    if (rc == 1) {  // full
        rrl_batches_take(open_, batch);
        send(batch);
    }
    return true;
}

void Batches::on_flush(void* arg) {
    static_cast<Batches*>(arg)->flush();
}

void Batches::flush() {
    while (rrl_batch_t* batch = rrl_batches_pop(open_)) send(batch);
    // write now rather than after the other posted events (responses to
    // clients, mostly): Redis runs the batches while the worker writes
    // them; a failed write may free a context, never a node
    for (Node& node : engine_.nodes.all()) {
        if (node.conn) engine_.loop.flush(node.conn);
    }
}

void Batches::send(rrl_batch_t* batch) {
    Node* node = batch_node(batch);
    // out of the open batches: the node may only be waited on now
    node->batches--;

    // a request gone (or timed out) in the meantime is not sent
    for (size_t i = 0; i < rrl_batch_size(batch);) {
        auto* parts = static_cast<rrl_call_t*>(rrl_batch_data(batch, i));
        size_t part = rrl_batch_part(batch, i);
        if (rrl_call_awaited(parts, part)) {
            i++;
            continue;
        }
        part_unsent(parts, part);
        rrl_batch_remove(batch, i);
        (void)part_out(parts, part);
    }
    if (rrl_batch_size(batch) == 0) {
        rrl_batch_free(batch);
        return;
    }
    if (node->ac == nullptr) {
        unsent(batch, true);
        fail(batch, "no connection");
        return;
    }
    size_t len;
    const char* command =
        rrl_batch_command(batch, engine_.sha.data(), engine_.sha.size(), &len);
    if (command == nullptr) {
        unsent(batch, false);
        fail(batch, "no memory");
        return;
    }
    if (node->command(on_reply, batch, command, len)) {
        rrl_batch_set_sent(batch, engine_.loop.clock());
        node->in_flight++;
        return;
    }
    unsent(batch, true);
    fail(batch, std::string("cannot send: ") +
                    ((node->ac && node->ac->errstr[0]) ? node->ac->errstr
                                                       : "closing"));
}

void Batches::on_reply(redisAsyncContext* ac, void* reply, void* privdata) {
    capi::guarded("a reply", 0, [&] {
        auto* batch = static_cast<rrl_batch_t*>(privdata);
        auto* rr = static_cast<const redisReply*>(reply);
        Node* node = batch_node(batch);
        Batches& self = node->engine.batches;
        (void)ac;

        node->engine.loop.reply(rrl_batch_sent(batch), rr);

        int kind = (rr != nullptr && rr->type == REDIS_REPLY_ERROR)
                       ? rrl_reply_error_kind(rr->str, rr->len)
                       : RRL_REPLY_ERROR;
        if (rrl_batch_count(batch)) {
            node->outcome(rrl_retry_counts_ok(
                rr != nullptr, rr && rr->type == REDIS_REPLY_ARRAY, kind));
        }
        node->in_flight--;

        switch (rrl_batch_retry(batch, kind)) {
            case RRL_RETRY_LOAD_SCRIPT: {
                // Redis lost the script (restart, SCRIPT FLUSH); it did not run
                size_t len;
                const char* script = rrl_script(&len);
                const char* argv[] = {"SCRIPT", "LOAD", script};
                const size_t argvlen[] = {6, 4, len};
                if (node->command_argv(nullptr, nullptr, 3, argv, argvlen) &&
                    self.resend(batch, node)) {
                    return 0;
                }
                break;
            }
            case RRL_RETRY_REDIRECT:
                if (self.redirect(batch, rr, kind)) {
                    node->idle();
                    return 0;
                }
                break;
        }
        self.answer(batch, rr);
        node->idle();
        return 0;
    });
}

bool Batches::resend(rrl_batch_t* batch, Node* node) {
    size_t len;
    // built once: given back as it was sent
    const char* command = rrl_batch_command(batch, nullptr, 0, &len);
    if (command == nullptr || !node->command(on_reply, batch, command, len)) {
        return false;
    }
    rrl_batch_set_sent(batch, engine_.loop.clock());
    node->in_flight++;
    // counted anew; a probe was the first node's: its reply ended it
    rrl_batch_resent(batch, node);
    return true;
}

// MOVED or ASK of the batch's slot: the engine names the node it goes to
// now; after ASK (the keys are being migrated), after ASKING.
bool Batches::redirect(rrl_batch_t* batch, const redisReply* rr, int kind) {
    unsigned slot, port;
    char host[RRL_HOST_MAX];
    if (rrl_reply_redirect(rr->str, rr->len, &slot, host, &port) != RRL_OK ||
        slot != rrl_batch_slot(batch)) {
        return false;
    }
    Node* node = engine_.redirect(batch_node(batch), kind, slot, host, port);
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
void Batches::answer(rrl_batch_t* batch, const redisReply* rr) {
    if (rr == nullptr) {
        fail(batch, "connection lost");
        return;
    }
    if (rr->type == REDIS_REPLY_ERROR) {
        engine_.ask(rrl_retry_ask(rrl_reply_error_kind(rr->str, rr->len)));
        // escaped: a hostile server must not forge log lines
        char text[128];
        size_t len =
            rrl_printable(text, sizeof(text),
                          reinterpret_cast<unsigned char*>(rr->str), rr->len);
        fail(batch, std::string(text, len));
        return;
    }
    if (rr->type != REDIS_REPLY_ARRAY ||
        rr->elements != rrl_batch_values(batch)) {
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
void Batches::fail(rrl_batch_t* batch, const std::string& why) {
    parts(batch, nullptr, why.data(), std::min<size_t>(why.size(), 128));
}

// each part waiting is answered: its share of rr, or error; then freed
void Batches::parts(rrl_batch_t* batch, const redisReply* rr, const char* error,
                    size_t len) {
    for (size_t i = 0; i < rrl_batch_size(batch); i++) {
        auto* parts = static_cast<rrl_call_t*>(rrl_batch_data(batch, i));
        size_t part = rrl_batch_part(batch, i);
        if (!part_out(parts, part)) continue;
        if (rr) {
            size_t k = rrl_batch_share(batch, i);
            size_t n = rrl_call_values(parts, part);
            int64_t* values = rrl_call_reply(parts, part);
            for (size_t j = 0; j < n; j++) {
                values[j] = rr->element[k + j]->integer;
            }
        }
        engine_.answered(parts, part, error, len);
    }
    rrl_batch_free(batch);
}

// A batch that cannot be sent: a failure of its node when the node is at
// fault (no connection, a write refused), once; else its probes abandoned.
void Batches::unsent(rrl_batch_t* batch, bool failed) {
    if (failed) {
        engine_.loop.error(RRL_METRICS_ERR_CONNECTION);
        if (rrl_batch_count(batch)) batch_node(batch)->outcome(false);
        return;
    }
    for (size_t i = 0; i < rrl_batch_size(batch); i++) {
        part_unsent(static_cast<rrl_call_t*>(rrl_batch_data(batch, i)),
                    rrl_batch_part(batch, i));
    }
}

// Takes the part out of its batch. false: nobody waits for it any more, as
// its request went away or timed out; the engine may free its call.
bool Batches::part_out(rrl_call_t* parts, size_t part) {
    if (rrl_call_out(parts, part)) return true;
    engine_.out(parts);
    return false;
}

// A part that is not sent: the probe it holds, if the breaker has not seen
// its outcome, is abandoned (the next call probes).
void Batches::part_unsent(rrl_call_t* parts, size_t part) {
    if (rrl_call_unsent(parts, part)) {
        static_cast<Node*>(rrl_call_node(parts, part))->abandon();
    }
}

}  // namespace rrl::engine
