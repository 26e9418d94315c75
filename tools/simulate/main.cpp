// rrl_simulate: offers a traffic pattern, in simulated time, to each
// algorithm of the real script on a real redis-server, then prints what
// passed and draws it as an SVG. See usage().
#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "api/rrl.h"
#include "script/algorithm.hpp"
#include "script/rate.hpp"
#include "script/script.hpp"
#include "script/script_reply.hpp"
#include "simulate.hpp"
#include "topology/redis_errors.hpp"

namespace {

const char usage_text[] =
    "usage: rrl_simulate [options]\n"
    "\n"
    "Offers a traffic pattern to each rate limiting algorithm through the\n"
    "module's own Lua script (EVALSHA, time injected, so simulated time runs\n"
    "as fast as Redis answers), prints offered/allowed per algorithm and\n"
    "draws allowed vs offered requests over time as an SVG, one panel per\n"
    "algorithm.\n"
    "\n"
    "options:\n"
    "  --pattern NAME      steady | boundary | idle-burst (default steady)\n"
    "      steady:     one client offering 2N per PERIOD, evenly spaced\n"
    "      boundary:   N requests in the last tenth of a window and N in\n"
    "                  the first tenth of the next (the fixed-window double\n"
    "                  burst), every 3 PERIODs starting at 1 PERIOD\n"
    "      idle-burst: idle for 1.5 PERIODs, a burst of 3N (1 per us),\n"
    "                  then N per PERIOD evenly\n"
    "  --rate RATE         N per PERIOD, as in the module: 10r/s, 5r/10s,\n"
    "                      100r/1m30s (default 10r/s)\n"
    "  --burst B           burst= for every algorithm (default: as the\n"
    "                      module, N for token_bucket, 0 for the others)\n"
    "  --cost C            cost of each request (default 1)\n"
    "  --duration TIME     simulated time, nginx syntax: 6s, 1m, 1500ms\n"
    "                      (default 6 PERIODs)\n"
    "  --buckets TIME      width of a plotted time bucket (default PERIOD/10)\n"
    "  --algorithms LIST   comma list (default all: fixed_window,\n"
    "                      sliding_log,sliding_window,token_bucket,\n"
    "                      leaky_bucket; gcra = leaky_bucket)\n"
    "  --out FILE          the SVG (default simulate-PATTERN.svg); '-':\n"
    "                      to stdout, the summary going to stderr;\n"
    "                      '': none\n"
    "  --redis HOST:PORT   use this Redis instead of starting one; only the\n"
    "                      tool's keys (rrl_simulate:*) are deleted\n"
    "  --socket PATH       the same, over a unix socket\n"
    "  --redis-server BIN  the redis-server to start (default: from PATH)\n"
    "  -h, --help          this text\n"
    "\n"
    "Without --redis/--socket, a private redis-server is started on a unix\n"
    "socket in a temporary directory (no persistence), flushed before each\n"
    "algorithm's run and stopped at exit.\n"
    "\n"
    "Simulated time starts on a PERIOD boundary (fixed windows are aligned\n"
    "on the Unix epoch). Per algorithm, the summary gives the requests\n"
    "offered and allowed, and the most allowed in any trailing PERIOD\n"
    "(t - PERIOD, t] (where: the window [s, s + PERIOD) from its first\n"
    "request), to compare with N; the SVG shades that window.\n"
    "\n"
    "examples:\n"
    "  rrl_simulate --pattern boundary --rate 10r/s --out boundary.svg\n"
    "  rrl_simulate --pattern idle-burst --rate 5r/s --burst 2 \\\n"
    "               --algorithms token_bucket,leaky_bucket --out -\n";

struct Options {
    sim::Pattern pattern = sim::Pattern::steady;
    std::string rate_text = "10r/s";
    rrl::Rate rate{10, 1000};
    std::uint64_t burst = RRL_BURST_UNSET;
    std::uint64_t cost = 1;
    std::uint64_t duration_ms = 0;  // 0: 6 PERIODs
    std::uint64_t bucket_ms = 0;    // 0: PERIOD / 10
    std::vector<int> algorithms;
    bool out_given = false;
    std::string out;
    std::string redis_host;
    int redis_port = 0;
    std::string socket;
    std::string server_binary = "redis-server";
};

[[noreturn]] void die(const std::string& message) {
    std::fprintf(stderr, "rrl_simulate: %s\n", message.c_str());
    std::exit(1);
}

bool parse_uint(std::string_view text, std::uint64_t* value) {
    if (text.empty() || text.size() > 15) return false;
    std::uint64_t v = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    *value = v;
    return true;
}

std::uint64_t parse_time(const std::string& opt, const std::string& text) {
    auto ms = rrl::parse_time_ms(text);
    if (!ms || *ms == 0) die("invalid " + opt + " \"" + text + "\"");
    return *ms;
}

Options parse_options(int argc, char** argv) {
    Options o;
    bool algorithms_given = false;

    for (int i = 1; i < argc; i++) {
        std::string arg = argv[i];
        std::string value;
        bool has_value = false;
        std::size_t eq = arg.find('=');
        if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
            has_value = true;
        }
        if (arg == "-h" || arg == "--help") {
            std::fputs(usage_text, stdout);
            std::exit(0);
        }
        auto next = [&]() -> std::string {
            if (has_value) return value;
            if (i + 1 >= argc) die(arg + " needs a value (see --help)");
            return argv[++i];
        };

        if (arg == "--pattern") {
            std::string v = next();
            if (!sim::parse_pattern(v, &o.pattern)) {
                die("unknown pattern \"" + v +
                    "\" (steady, boundary, idle-burst)");
            }
        } else if (arg == "--rate") {
            o.rate_text = next();
            auto rate = rrl::parse_rate(o.rate_text);
            if (!rate) {
                die("invalid --rate \"" + o.rate_text +
                    "\" (e.g. 10r/s, 5r/10s)");
            }
            o.rate = *rate;
        } else if (arg == "--burst") {
            std::string v = next();
            if (!parse_uint(v, &o.burst)) die("invalid --burst \"" + v + "\"");
        } else if (arg == "--cost") {
            std::string v = next();
            if (!parse_uint(v, &o.cost) || o.cost == 0) {
                die("invalid --cost \"" + v + "\"");
            }
        } else if (arg == "--duration") {
            o.duration_ms = parse_time(arg, next());
        } else if (arg == "--buckets") {
            o.bucket_ms = parse_time(arg, next());
        } else if (arg == "--algorithms") {
            algorithms_given = true;
            std::string list = next();
            std::size_t start = 0;
            while (start <= list.size()) {
                std::size_t comma = list.find(',', start);
                if (comma == std::string::npos) comma = list.size();
                std::string name = list.substr(start, comma - start);
                const rrl::Algorithm* a = rrl::find_algorithm(name);
                if (a == nullptr) die("unknown algorithm \"" + name + "\"");
                o.algorithms.push_back(a->id);
                start = comma + 1;
            }
        } else if (arg == "--out") {
            o.out = next();
            o.out_given = true;
        } else if (arg == "--redis") {
            std::string v = next();
            std::size_t colon = v.rfind(':');
            std::uint64_t port = 0;
            if (colon == std::string::npos || colon == 0 ||
                !parse_uint(v.substr(colon + 1), &port) || port == 0 ||
                port > 65535) {
                die("invalid --redis \"" + v + "\" (HOST:PORT)");
            }
            o.redis_host = v.substr(0, colon);
            o.redis_port = static_cast<int>(port);
        } else if (arg == "--socket") {
            o.socket = next();
        } else if (arg == "--redis-server") {
            o.server_binary = next();
        } else {
            die("unknown option \"" + std::string(argv[i]) + "\" (see --help)");
        }
    }

    if (!o.redis_host.empty() && !o.socket.empty()) {
        die("give --redis or --socket, not both");
    }
    if (!algorithms_given) {
        for (int id = 0; id < RRL_ALGORITHM_COUNT; id++) {
            o.algorithms.push_back(id);
        }
    }
    if (!o.out_given) {
        o.out = std::string("simulate-") + sim::pattern_name(o.pattern) + ".svg";
    }
    return o;
}

void log_to_stderr(void*, int, const char* msg) {
    std::fprintf(stderr, "rrl_simulate: core: %s\n", msg);
}

class Script {
public:
    explicit Script(sim::Connection* c) : c_(c) {}

    void load() {
        std::string error;
        sim::Reply r =
            c_->command({"SCRIPT", "LOAD", std::string(rrl::script())}, &error);
        if (!r) die(error);
        if (r->type != REDIS_REPLY_STRING) {
            die(std::string("SCRIPT LOAD failed: ") +
                (r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply"));
        }
        if (std::string(r->str, r->len) != rrl_script_sha1()) {
            die("SCRIPT LOAD returned " + std::string(r->str, r->len) +
                ", rrl_script_sha1() is " + rrl_script_sha1());
        }
    }

    // true if the request passed
    bool call(const std::string& key, std::int64_t now_us, int algorithm,
              const Options& o, std::uint64_t burst) {
        std::vector<std::string> argv = {
            "EVALSHA",
            rrl_script_sha1(),
            "1",
            key,
            std::to_string(now_us),
            std::string(rrl::algorithm(algorithm)->name),
            std::to_string(o.rate.count),
            std::to_string(o.rate.period_ms),
            std::to_string(burst),
            std::to_string(o.cost)};

        for (int attempt = 0;; attempt++) {
            // Redis expires keys on its own clock, not the simulated one:
            // PERSIST, in the same round trip, keeps the state the script
            // left, as its decisions never rely on a key having expired.
            std::string error;
            std::vector<sim::Reply> replies =
                c_->pipeline({argv, {"PERSIST", key}}, &error);
            if (replies.empty()) die(error);
            sim::Reply& r = replies[0];
            if (replies[1]->type == REDIS_REPLY_ERROR) {
                die(std::string("PERSIST: ") + replies[1]->str);
            }
            if (r->type == REDIS_REPLY_ERROR) {
                std::string text(r->str, r->len);
                if (attempt == 0 &&
                    rrl::error_kind(text) == RRL_REPLY_NOSCRIPT) {
                    load();
                    continue;
                }
                die("EVALSHA: " + text);
            }
            if (r->type != REDIS_REPLY_ARRAY) die("EVALSHA: unexpected reply");

            std::vector<std::int64_t> values;
            for (size_t i = 0; i < r->elements; i++) {
                if (r->element[i]->type != REDIS_REPLY_INTEGER) {
                    die("EVALSHA: non-integer in the reply");
                }
                values.push_back(r->element[i]->integer);
            }
            std::string why;
            auto decoded =
                rrl::decode_reply(values.data(), values.size(), 1, &why);
            if (!decoded) die("EVALSHA: undecodable reply: " + why);
            const rrl_decision_t& decision = decoded->decision;
            if (decision.now_us != now_us) {
                die("the script did not take the injected time " +
                    std::to_string(now_us) + " (saw " +
                    std::to_string(decision.now_us) + ")");
            }
            return decision.passed != 0;
        }
    }

private:
    sim::Connection* c_;
};

void clear_key(sim::Connection* c, bool own_server, const std::string& key) {
    std::string error;
    sim::Reply r = own_server ? c->command({"FLUSHALL"}, &error)
                              : c->command({"DEL", key}, &error);
    if (!r) die(error);
    if (r->type == REDIS_REPLY_ERROR) {
        die(std::string(own_server ? "FLUSHALL" : "DEL") + ": " + r->str);
    }
}

std::string seconds(std::int64_t us) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.3fs", static_cast<double>(us) / 1e6);
    return buf;
}

}  // namespace

int main(int argc, char** argv) {
    Options o = parse_options(argc, argv);
    rrl_set_logger(log_to_stderr, nullptr);

    const std::int64_t period_us =
        static_cast<std::int64_t>(o.rate.period_ms) * 1000;
    const std::uint64_t duration_ms =
        o.duration_ms != 0 ? o.duration_ms : 6 * o.rate.period_ms;
    std::uint64_t bucket_ms = o.bucket_ms;
    if (bucket_ms == 0) {
        // PERIOD/10, or wider: 1, 2 or 5 x 10^k ms, at most 400 buckets
        bucket_ms = std::max<std::uint64_t>(1, o.rate.period_ms / 10);
        for (std::uint64_t scale = 1; duration_ms / bucket_ms > 400;
             scale *= 10) {
            for (std::uint64_t m : {1, 2, 5, 10}) {
                if (m * scale >= bucket_ms && duration_ms / (m * scale) <= 400) {
                    bucket_ms = m * scale;
                    break;
                }
            }
        }
    }
    const std::int64_t duration_us = static_cast<std::int64_t>(duration_ms) * 1000;
    const std::int64_t bucket_us = static_cast<std::int64_t>(bucket_ms) * 1000;
    const std::size_t nbuckets =
        static_cast<std::size_t>((duration_us + bucket_us - 1) / bucket_us);
    if (nbuckets > 5000) die("too many buckets (" + std::to_string(nbuckets) +
                             "): use a wider --buckets");

    // a bound on the request count before building the list
    long double expected = static_cast<long double>(duration_ms) /
                               static_cast<long double>(o.rate.period_ms) *
                               2.0L * static_cast<long double>(o.rate.count) +
                           3.0L * static_cast<long double>(o.rate.count);
    if (expected > 2e6L) {
        die("the pattern would offer about " +
            std::to_string(static_cast<long long>(expected)) +
            " requests per algorithm: shorten --duration or lower --rate");
    }
    std::vector<std::int64_t> times =
        sim::pattern_times(o.pattern, o.rate.count, period_us, duration_us);

    // simulated time starts on a PERIOD boundary near 2023-11-14
    const std::int64_t epoch_us = 1700000000LL * 1000000;
    const std::int64_t t0 = epoch_us - epoch_us % period_us;

    // Redis
    bool own_server = o.redis_host.empty() && o.socket.empty();
    sim::Connection conn;
    std::string error, where;
    if (own_server) {
        std::string sock = sim::start_own_server(o.server_binary, &error);
        if (sock.empty()) die(error);
        if (!conn.connect_unix(sock, &error)) die(error);
        where = "own " + o.server_binary + ", unix socket";
    } else if (!o.socket.empty()) {
        if (!conn.connect_unix(o.socket, &error)) die(error);
        where = o.socket;
    } else {
        if (!conn.connect_tcp(o.redis_host, o.redis_port, &error)) die(error);
        where = o.redis_host + ":" + std::to_string(o.redis_port);
    }
    {
        sim::Reply r = conn.command({"INFO", "server"}, &error);
        if (r && r->type == REDIS_REPLY_STRING) {
            std::string info(r->str, r->len);
            std::size_t p = info.find("redis_version:");
            if (p != std::string::npos) {
                std::size_t e = info.find_first_of("\r\n", p);
                where = "Redis " + info.substr(p + 14, e - p - 14) + ", " + where;
            }
        }
    }
    Script script(&conn);
    script.load();

    const std::string period_text = sim::format_duration_ms(o.rate.period_ms);
    sim::Chart chart;
    chart.title = std::string(sim::pattern_name(o.pattern)) + " at " +
                  o.rate_text + ": N = " + std::to_string(o.rate.count) +
                  " per " + period_text + ", time buckets of " +
                  sim::format_duration_ms(bucket_ms) +
                  (o.cost != 1 ? ", cost " + std::to_string(o.cost) : "");
    chart.subtitle = std::string(sim::pattern_description(o.pattern)) +
                     ". Offered to each algorithm of the real script on "
                     "Redis, in simulated time (rrl_simulate).";
    chart.limit = o.rate.count;
    chart.cost = o.cost;
    chart.period_us = period_us;
    chart.bucket_us = bucket_us;
    chart.duration_us = duration_us;

    // with the SVG on stdout, the summary goes to stderr
    FILE* report = o.out == "-" ? stderr : stdout;
    std::fprintf(report, "pattern %s: %s\n", sim::pattern_name(o.pattern),
                sim::pattern_description(o.pattern));
    std::fprintf(report, "rate %s (N = %llu per %s), cost %llu, duration %s, "
                "buckets %s; %s\n\n",
                o.rate_text.c_str(),
                static_cast<unsigned long long>(o.rate.count),
                period_text.c_str(), static_cast<unsigned long long>(o.cost),
                sim::format_duration_ms(duration_ms).c_str(),
                sim::format_duration_ms(bucket_ms).c_str(), where.c_str());
    std::fprintf(report, "%-15s %6s %8s %8s  %s\n", "algorithm", "burst", "offered",
                "allowed",
                ("most allowed in any " + period_text + " (where)").c_str());

    for (int alg : o.algorithms) {
        const rrl::Algorithm& a = *rrl::algorithm(alg);
        const std::string name(a.name);
        const std::string key = "rrl_simulate:{" + name + "}";
        const std::uint64_t burst =
            rrl::effective_burst(a, o.rate.count, o.burst);
        if (rrl::capacity(a, o.rate.count, burst) < o.cost) {
            std::fprintf(stderr,
                         "rrl_simulate: %s: no request of cost %llu can "
                         "ever pass\n",
                         name.c_str(), static_cast<unsigned long long>(o.cost));
        }

        clear_key(&conn, own_server, key);
        std::vector<std::int64_t> allowed;
        for (std::int64_t t : times) {
            if (script.call(key, t0 + t, alg, o, burst)) allowed.push_back(t);
        }
        if (!own_server) clear_key(&conn, own_server, key);

        sim::Panel p;
        p.algorithm = name;
        p.burst = burst;
        p.offered.assign(nbuckets, 0);
        p.allowed.assign(nbuckets, 0);
        for (std::int64_t t : times) p.offered[static_cast<std::size_t>(t / bucket_us)]++;
        for (std::int64_t t : allowed) p.allowed[static_cast<std::size_t>(t / bucket_us)]++;
        p.offered_total = times.size();
        p.allowed_total = allowed.size();

        // The most allowed in any PERIOD: the windows [s, s + PERIOD) that
        // start at an allowed request hold as many as the trailing windows
        // (t - PERIOD, t] at their best, and show where the burst starts.
        std::size_t hi = 0;
        for (std::size_t lo = 0; lo < allowed.size(); lo++) {
            while (hi < allowed.size() && allowed[hi] < allowed[lo] + period_us) {
                hi++;
            }
            std::uint64_t n = hi - lo;
            if (n > p.max_window) {
                p.max_window = n;
                p.max_window_start_us = allowed[lo];
            }
        }

        std::string at;
        if (p.max_window > 0) {
            at = "  [" + seconds(p.max_window_start_us) + ", " +
                 seconds(p.max_window_start_us + period_us) + ")";
        }
        std::string cost_text =
            o.cost == 1 ? "" : " x cost " + std::to_string(o.cost);
        std::fprintf(report, "%-15s %6llu %8llu %8llu  %5llu%s = %.1f x N%s\n",
                     name.c_str(), static_cast<unsigned long long>(burst),
                     static_cast<unsigned long long>(p.offered_total),
                     static_cast<unsigned long long>(p.allowed_total),
                     static_cast<unsigned long long>(p.max_window),
                     cost_text.c_str(),
                     static_cast<double>(p.max_window * o.cost) /
                         static_cast<double>(o.rate.count),
                     at.c_str());
        chart.panels.push_back(std::move(p));
    }

    if (!o.out.empty()) {
        std::string svg = sim::render_svg(chart);
        if (o.out == "-") {
            std::fputs(svg.c_str(), stdout);
        } else {
            std::ofstream out(o.out, std::ios::binary);
            out << svg;
            out.close();
            if (!out) die("cannot write " + o.out);
            std::fprintf(report, "\nwrote %s\n", o.out.c_str());
        }
    }
    std::fflush(stdout);
    sim::stop_own_server();
    return 0;
}
