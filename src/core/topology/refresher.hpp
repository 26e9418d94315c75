// When a question about the topology (CLUSTER SLOTS, a Sentinel's
// get-master-addr-by-name) is sent, and to which target, as a state
// machine. It sends through its conf's send callback and sets its owner's
// one timer through the timer callback (the owner says when that timer
// fires); time is passed in, in ms of the owner's clock.
//
// One question out at a time, at most one per min_ms; after a failure
// another in min_ms (the first `quick` failures in a row), then in
// retry_ms; the next poll poll_ms after each answer.
//
//   want      --one out--> again: wanted once it is answered
//             --the timer is set (a timeout or a delay)--> nothing
//             --the timer is the next poll--> that poll is canceled, then:
//             --sent less than min_ms ago--> the timer: the rest of min_ms
//             --else--> sent; the timer: timeout_ms
//   failed    --> the timer: min_ms (the first `quick` failures), retry_ms
//   answered  --> failures forgotten; again if wanted meanwhile, else the
//                 timer: the next poll
#pragma once

#include <cstddef>
#include <cstdint>

namespace rrl {

struct RefresherConf {
    std::uint64_t min_ms = 0;    // at most one question this often
    std::uint64_t retry_ms = 0;  // after `quick` failures in a row
    std::uint64_t quick = 0;
    std::uint64_t poll_ms = 0;     // after an answer; 0: no polling
    std::uint64_t timeout_ms = 0;  // of a question
    bool rotate = false;           // a failure: the next target
    // sends the question of generation (its answer gives it back): true
    // when sent
    bool (*send)(void* data, std::uint64_t generation) = nullptr;
    // (re)sets the owner's timer to ms; 0: cancels it
    void (*timer)(void* data, std::uint64_t ms) = nullptr;
    void* data = nullptr;
};

class Refresher {
   public:
    explicit Refresher(const RefresherConf& conf = {}) : conf_(conf) {}

    // a question is wanted: sent now, after a delay or after the one out
    void want(std::int64_t now_ms);
    // the timer fired: true if it was a question's timeout (then failed)
    bool fired();
    // the question failed (timed out, a useless answer): asked again later
    void failed();
    // an answer of generation: true if it is the one awaited
    bool answer(std::uint64_t generation);
    // the answer helped: true if a question was wanted meanwhile (ask again)
    bool answered();
    // the one of n targets to ask; take: the one after it is next
    std::size_t target(std::size_t n, bool take);
    // exiting: nothing is asked any more, an answer out is ignored
    void stop();

    // the state, for tests
    std::uint64_t failures = 0;     // in a row
    std::uint64_t generation = 0;   // of the question awaited
    std::uint64_t next_target = 0;  // the next seed or sentinel, mod n
    std::int64_t last_ms = 0;       // when one was last sent
    bool sent = false;              // one ever was
    bool asking = false;            // one is out
    bool again = false;             // wanted while one was out
    bool polling = false;           // the timer is the next poll
    bool timer_set = false;
    bool stopped = false;

   private:
    void set_timer(std::uint64_t ms);
    void send(std::int64_t now_ms);

    RefresherConf conf_;
};

}  // namespace rrl
