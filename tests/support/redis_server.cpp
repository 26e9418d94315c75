#include "tests/support/redis_server.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace rrl_test {

RedisClient::RedisClient(const std::string& socket_path) {
    struct timeval timeout = {5, 0};
    ctx_.reset(redisConnectUnixWithTimeout(socket_path.c_str(), timeout));
    if (connected()) redisSetTimeout(ctx_.get(), timeout);
}

Reply RedisClient::command(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> argvlen;
    for (const std::string& a : args) {
        argv.push_back(a.data());
        argvlen.push_back(a.size());
    }
    redisReply* r = nullptr;
    if (connected()) {
        r = static_cast<redisReply*>(redisCommandArgv(
            ctx_.get(), static_cast<int>(argv.size()), argv.data(),
            argvlen.data()));
    }
    if (r == nullptr) {
        ADD_FAILURE() << "redis command " << (args.empty() ? "" : args[0])
                      << " failed: " << (ctx_ ? ctx_->errstr : "no context");
        // A stand-in error reply so callers can inspect ->type safely.
        r = static_cast<redisReply*>(calloc(1, sizeof(redisReply)));
        r->type = REDIS_REPLY_ERROR;
        const char msg[] = "transport error";
        r->str = static_cast<char*>(malloc(sizeof(msg)));
        memcpy(r->str, msg, sizeof(msg));
        r->len = sizeof(msg) - 1;
    }
    return Reply(r);
}

std::string RedisClient::status_or_string(const std::vector<std::string>& args) {
    Reply r = command(args);
    if (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING) {
        return std::string(r->str, r->len);
    }
    if (r->type == REDIS_REPLY_NIL) return "(nil)";
    ADD_FAILURE() << args[0] << ": unexpected reply type " << r->type
                  << (r->type == REDIS_REPLY_ERROR ? std::string(": ") + r->str
                                                   : std::string());
    return "";
}

long long RedisClient::integer(const std::vector<std::string>& args) {
    Reply r = command(args);
    if (r->type != REDIS_REPLY_INTEGER) {
        ADD_FAILURE() << args[0] << ": unexpected reply type " << r->type;
        return -999999;
    }
    return r->integer;
}

namespace {

std::string find_redis_server() {
    if (const char* path = std::getenv("PATH")) {
        std::string p = path;
        size_t start = 0;
        while (start <= p.size()) {
            size_t end = p.find(':', start);
            if (end == std::string::npos) end = p.size();
            std::string candidate = p.substr(start, end - start) + "/redis-server";
            if (access(candidate.c_str(), X_OK) == 0) return candidate;
            start = end + 1;
        }
    }
    return "/usr/bin/redis-server";
}

}  // namespace

RedisServer::RedisServer() {
    char tmpl[] = "/tmp/rrl-redis-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
        error_ = std::string("mkdtemp: ") + strerror(errno);
        return;
    }
    dir_ = tmpl;
    socket_ = dir_ + "/redis.sock";

    const std::string binary = find_redis_server();
    std::vector<std::string> args = {
        binary,       "--port",      "0",          "--unixsocket", socket_,
        "--unixsocketperm", "700",   "--save",     "",             "--appendonly",
        "no",         "--dir",       dir_,         "--daemonize",  "no",
        "--logfile",  dir_ + "/redis.log", "--databases", "1"};

    pid_ = fork();
    if (pid_ < 0) {
        error_ = std::string("fork: ") + strerror(errno);
        return;
    }
    if (pid_ == 0) {
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
    }

    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            error_ = "redis-server exited early (status " +
                     std::to_string(status) + "), see " + dir_ + "/redis.log";
            return;
        }
        if (access(socket_.c_str(), F_OK) == 0) {
            redisContext* c = redisConnectUnix(socket_.c_str());
            if (c != nullptr && c->err == 0) {
                auto* r = static_cast<redisReply*>(redisCommand(c, "PING"));
                bool pong = r != nullptr && r->type == REDIS_REPLY_STATUS &&
                            std::string(r->str, r->len) == "PONG";
                if (r != nullptr) freeReplyObject(r);
                redisFree(c);
                if (pong) {
                    ok_ = true;
                    return;
                }
            } else if (c != nullptr) {
                redisFree(c);
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    error_ = "redis-server did not answer PING within 5 s";
}

RedisServer::~RedisServer() { stop(); }

void RedisServer::stop() {
    if (pid_ > 0) {
        kill(pid_, SIGTERM);
        bool exited = false;
        for (int i = 0; i < 400 && !exited; i++) {  // up to ~2 s
            if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
                exited = true;
            } else {
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
        }
        if (!exited) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
        pid_ = -1;
    }
    if (!dir_.empty()) {
        unlink(socket_.c_str());
        unlink((dir_ + "/redis.log").c_str());
        rmdir(dir_.c_str());
        dir_.clear();
    }
}

}  // namespace rrl_test
