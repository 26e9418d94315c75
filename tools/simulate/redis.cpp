// A redis-server of the tool's own, and a synchronous hiredis connection.
#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "simulate.hpp"

namespace sim {

namespace {

// What the cleanup needs, in plain storage: it also runs in signal handlers.
volatile pid_t server_pid = 0;
char dir_path[256];
char socket_path[300];
char log_path[300];
bool cleanup_registered = false;

void cleanup() {
    pid_t pid = server_pid;
    if (pid > 0) {
        server_pid = 0;
        kill(pid, SIGTERM);
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    if (dir_path[0] != '\0') {
        unlink(socket_path);
        unlink(log_path);
        rmdir(dir_path);
        dir_path[0] = '\0';
    }
}

void on_signal(int sig) {
    cleanup();
    signal(sig, SIG_DFL);
    raise(sig);
}

bool answers_ping(const char* path) {
    struct timeval timeout = {1, 0};
    redisContext* c = redisConnectUnixWithTimeout(path, timeout);
    bool ok = false;
    if (c != nullptr && c->err == 0) {
        auto* r = static_cast<redisReply*>(redisCommand(c, "PING"));
        ok = r != nullptr && r->type == REDIS_REPLY_STATUS &&
             std::strcmp(r->str, "PONG") == 0;
        if (r != nullptr) freeReplyObject(r);
    }
    if (c != nullptr) redisFree(c);
    return ok;
}

std::string log_tail() {
    std::ifstream in(log_path);
    std::string line, tail;
    while (std::getline(in, line)) {
        tail += "  " + line + "\n";
        if (tail.size() > 2000) tail.erase(0, tail.size() - 2000);
    }
    return tail;
}

}  // namespace

std::string start_own_server(const std::string& binary, std::string* error) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") +
                        "/rrl_simulate.XXXXXX";
    if (templ.size() + 16 > sizeof(dir_path)) {
        *error = "TMPDIR is too long for a unix socket path";
        return "";
    }
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) {
        *error = "mkdtemp " + templ + ": " + std::strerror(errno);
        return "";
    }
    std::snprintf(dir_path, sizeof(dir_path), "%s", buf.data());
    std::snprintf(socket_path, sizeof(socket_path), "%s/redis.sock", dir_path);
    std::snprintf(log_path, sizeof(log_path), "%s/redis.log", dir_path);

    if (!cleanup_registered) {
        cleanup_registered = true;
        std::atexit(cleanup);
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        signal(SIGHUP, on_signal);
    }

    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        *error = std::string("fork: ") + std::strerror(errno);
        cleanup();
        return "";
    }
    if (pid == 0) {
        // the server goes when we go, however we go
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(1);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        std::vector<std::string> args = {
            binary,      "--port",      "0",         "--unixsocket",
            socket_path, "--save",      "",          "--appendonly",
            "no",        "--dir",       dir_path,    "--logfile",
            log_path,    "--daemonize", "no"};
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        execvp(argv[0], argv.data());
        std::fprintf(stderr, "rrl_simulate: cannot run %s: %s\n",
                     binary.c_str(), std::strerror(errno));
        _exit(127);
    }
    server_pid = pid;

    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            server_pid = 0;
            *error = binary + " exited before answering PING";
            std::string tail = log_tail();
            if (!tail.empty()) *error += "; its log:\n" + tail;
            cleanup();
            return "";
        }
        if (access(socket_path, F_OK) == 0 && answers_ping(socket_path)) {
            return socket_path;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    *error = binary + " did not answer PING within 10s";
    cleanup();
    return "";
}

void stop_own_server() { cleanup(); }

void ReplyDeleter::operator()(redisReply* r) const {
    if (r != nullptr) freeReplyObject(r);
}

Connection::~Connection() {
    if (ctx_ != nullptr) redisFree(ctx_);
}

static bool connected(redisContext* c, const std::string& where,
                      std::string* error) {
    if (c == nullptr) {
        *error = "cannot connect to " + where + ": out of memory";
        return false;
    }
    if (c->err != 0) {
        *error = "cannot connect to " + where + ": " + c->errstr;
        redisFree(c);
        return false;
    }
    return true;
}

bool Connection::connect_unix(const std::string& path, std::string* error) {
    struct timeval timeout = {5, 0};
    redisContext* c = redisConnectUnixWithTimeout(path.c_str(), timeout);
    if (!connected(c, path, error)) return false;
    ctx_ = c;
    return true;
}

bool Connection::connect_tcp(const std::string& host, int port,
                             std::string* error) {
    struct timeval timeout = {5, 0};
    redisContext* c = redisConnectWithTimeout(host.c_str(), port, timeout);
    if (!connected(c, host + ":" + std::to_string(port), error)) return false;
    ctx_ = c;
    return true;
}

Reply Connection::command(const std::vector<std::string>& argv,
                          std::string* error) {
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    for (const std::string& a : argv) {
        ptrs.push_back(a.data());
        lens.push_back(a.size());
    }
    void* r = redisCommandArgv(ctx_, static_cast<int>(argv.size()),
                               ptrs.data(), lens.data());
    if (r == nullptr) {
        *error = std::string("redis: ") +
                 (ctx_->err != 0 ? ctx_->errstr : "no reply");
        return nullptr;
    }
    return Reply(static_cast<redisReply*>(r));
}

std::vector<Reply> Connection::pipeline(
    const std::vector<std::vector<std::string>>& commands, std::string* error) {
    for (const std::vector<std::string>& argv : commands) {
        std::vector<const char*> ptrs;
        std::vector<size_t> lens;
        for (const std::string& a : argv) {
            ptrs.push_back(a.data());
            lens.push_back(a.size());
        }
        if (redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()),
                                   ptrs.data(), lens.data()) != REDIS_OK) {
            *error = std::string("redis: ") + ctx_->errstr;
            return {};
        }
    }
    std::vector<Reply> replies;
    for (std::size_t i = 0; i < commands.size(); i++) {
        void* r = nullptr;
        if (redisGetReply(ctx_, &r) != REDIS_OK || r == nullptr) {
            *error = std::string("redis: ") +
                     (ctx_->err != 0 ? ctx_->errstr : "no reply");
            return {};
        }
        replies.emplace_back(static_cast<redisReply*>(r));
    }
    return replies;
}

}  // namespace sim
