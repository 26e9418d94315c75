// A throwaway redis-server for the script tests: listens only on a unix
// socket in a fresh temporary directory (no TCP port, so parallel test
// processes never collide), persists nothing, and is killed on destruction.
#pragma once

#include <hiredis/hiredis.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rrl_test {

struct ReplyDeleter {
    void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

struct ContextDeleter {
    void operator()(redisContext* c) const { redisFree(c); }
};

// One synchronous hiredis connection.
class RedisClient {
public:
    explicit RedisClient(const std::string& socket_path);

    bool connected() const { return ctx_ && ctx_->err == 0; }

    // Sends one command, every argument binary-safe; never returns null
    // (a transport failure fails the current test and returns an error
    // reply-like object with type REDIS_REPLY_ERROR).
    Reply command(const std::vector<std::string>& args);

    // Shorthands that ADD_FAILURE on an unexpected reply type.
    std::string status_or_string(const std::vector<std::string>& args);
    long long integer(const std::vector<std::string>& args);

private:
    std::unique_ptr<redisContext, ContextDeleter> ctx_;
};

class RedisServer {
public:
    // Starts redis-server (from PATH, /usr/bin as a fallback) and waits up
    // to ~5 s for PING; ok() says whether it answered.
    RedisServer();
    ~RedisServer();

    RedisServer(const RedisServer&) = delete;
    RedisServer& operator=(const RedisServer&) = delete;

    bool ok() const { return ok_; }
    const std::string& socket_path() const { return socket_; }
    const std::string& error() const { return error_; }

private:
    void stop();

    pid_t pid_ = -1;
    bool ok_ = false;
    std::string dir_;
    std::string socket_;
    std::string error_;
};

}  // namespace rrl_test
