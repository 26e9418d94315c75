// What a batch's reply leads to, by its kind (error_kind(), or
// RRL_REPLY_ERROR for a reply that is not an error): sent again once after
// NOSCRIPT (with the script loaded: Redis lost it and did not run it), once
// after MOVED or ASK (to the node named), else answered; whether the
// circuit breaker counts it as Redis answering; whom to ask who serves now.
#pragma once

namespace rrl {

enum class RetryAction { answer, load_script, redirect };

RetryAction retry_action(int kind, bool reloaded, bool redirected);

// NOSCRIPT, MOVED and ASK are Redis answering, as is an array.
bool retry_counts_ok(bool replied, bool array, int kind);

enum class RetryAsk { nobody, sentinel, cluster };

// After an error reply: not (or no more) the primary; the slot map stale.
RetryAsk retry_ask(int kind);

}  // namespace rrl
