// A request's script call as parts: one in a single Redis (or behind
// Sentinel), one a Cluster slot of its keys, each with the limits of that
// slot in the request's order. The parts' replies are kept here and merged
// into the reply the script gives the whole request, so that decoding is
// the same in every mode. Where some part rejected or failed, the parts that
// passed have consumed: each is sent the script's release form
// (reserve-then-release), which gives back what its reservation took.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rrl {

class CallPlan {
   public:
    // argv as the handler builds it:
    // [EVALSHA sha n key.. time (algorithm limit period burst cost)..];
    // zones[j] names limit j's zone (a batch sends each zone's arguments
    // once). Throws std::invalid_argument when argv is not of that shape.
    CallPlan(const std::vector<std::string_view>& argv,
             std::vector<const void*> zones, bool cluster);

    std::size_t parts() const { return parts_.size(); }
    unsigned slot(std::size_t part) const { return at(part).slot; }
    std::size_t limits(std::size_t part) const { return at(part).index.size(); }
    // The integers of the part's reply.
    std::size_t values(std::size_t part) const;

    // The part's limit j: its key, zone, the zone's argument k (algorithm,
    // limit, period, burst) and its cost.
    std::string_view key(std::size_t part, std::size_t j) const;
    const void* zone(std::size_t part, std::size_t j) const;
    std::string_view zone_arg(std::size_t part, std::size_t j,
                              std::size_t k) const;
    std::string_view cost(std::size_t part, std::size_t j) const;

    // Where the part's reply goes, values(part) integers: it is answered.
    std::int64_t* reply(std::size_t part);

    // The whole request's reply into out (room for cap integers): its
    // length, or 0 when some part has no reply.
    std::size_t merge(std::int64_t* out, std::size_t cap) const;

    // Whether the part passed while the request as a whole did not.
    bool to_release(std::size_t part) const;
    // [EVALSHA sha n key.. "release" at time (limit's arguments)..] in RESP,
    // "at" the part's reply's time.
    std::string release_command(std::size_t part) const;

   private:
    struct Limit {
        std::string key;
        std::string args[5];  // algorithm limit period burst cost
        const void* zone;
    };
    struct Part {
        unsigned slot = 0;
        std::vector<std::size_t> index;  // the request's limit of each
        std::vector<std::int64_t> values;
        bool ok = false;
    };

    const Part& at(std::size_t part) const;
    const Limit& limit(std::size_t part, std::size_t j) const;

    std::string sha_;
    std::string time_;
    std::vector<Limit> limits_;
    std::vector<Part> parts_;
};

}  // namespace rrl
