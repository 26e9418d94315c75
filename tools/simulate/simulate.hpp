// rrl_simulate: drives traffic patterns in simulated time against a real
// redis-server through the real script, and plots what each algorithm
// allowed. Shared declarations of the tool's parts.
#ifndef RRL_SIMULATE_HPP
#define RRL_SIMULATE_HPP

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct redisContext;
struct redisReply;

namespace sim {

// ---- patterns.cpp: the offered traffic, in microseconds from the start

enum class Pattern { steady, boundary, idle_burst };

bool parse_pattern(std::string_view name, Pattern* pattern);
const char* pattern_name(Pattern pattern);
const char* pattern_description(Pattern pattern);

// The request times, sorted, in [0, duration_us). Deterministic. The start
// (time 0) is a PERIOD boundary, as the simulation clock is aligned on one.
std::vector<std::int64_t> pattern_times(Pattern pattern, std::uint64_t limit,
                                        std::int64_t period_us,
                                        std::int64_t duration_us);

// ---- redis.cpp: a redis-server of our own, and a connection

// Starts redis-server on a unix socket in a fresh temporary directory and
// waits until it answers PING. Stopped (and the directory removed) by
// stop_own_server(), which also runs at exit and on SIGINT/SIGTERM/SIGHUP.
// Returns the socket path, or "" with a message in *error.
std::string start_own_server(const std::string& binary, std::string* error);
void stop_own_server();

struct ReplyDeleter {
    void operator()(redisReply* r) const;
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

class Connection {
public:
    Connection() = default;
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    bool connect_unix(const std::string& path, std::string* error);
    bool connect_tcp(const std::string& host, int port, std::string* error);

    // nullptr (and *error) on a connection failure; error replies are
    // returned as replies.
    Reply command(const std::vector<std::string>& argv, std::string* error);

    // Sends all the commands at once, then reads their replies; empty (and
    // *error) on a connection failure.
    std::vector<Reply> pipeline(
        const std::vector<std::vector<std::string>>& commands,
        std::string* error);

private:
    redisContext* ctx_ = nullptr;
};

// ---- svg.cpp: the picture

struct Panel {
    std::string algorithm;
    std::uint64_t burst = 0;
    std::vector<std::uint64_t> offered;  // per bucket
    std::vector<std::uint64_t> allowed;  // per bucket
    std::uint64_t offered_total = 0;
    std::uint64_t allowed_total = 0;
    std::uint64_t max_window = 0;          // most allowed in any PERIOD
    std::int64_t max_window_start_us = 0;  // [start, start + PERIOD)
};

struct Chart {
    std::string title;
    std::string subtitle;
    std::uint64_t limit = 0;  // N
    std::uint64_t cost = 1;   // of each request: N counts units of cost
    std::int64_t period_us = 0;
    std::int64_t bucket_us = 0;
    std::int64_t duration_us = 0;
    std::vector<Panel> panels;
};

std::string render_svg(const Chart& chart);

// "1s", "250ms", "1m30s"
std::string format_duration_ms(std::uint64_t ms);

}  // namespace sim

#endif  // RRL_SIMULATE_HPP
