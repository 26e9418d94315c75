-- The OpenResty peer of bench/compare.sh: what users build instead of the
-- module, written as well as such a user would: Debian's
-- libnginx-mod-http-lua and lua-nginx-redis (lua-resty-redis as
-- `nginx.redis`), access_by_lua, a connection from the cosocket pool per
-- request (connect + set_keepalive) and one EVALSHA of the module's own
-- script (lua/*.lua, concatenated as tools/embed-lua.sh does) with the
-- module's keys and arguments:
--   KEYS[i] = rrl:{<zone>:<key>}:<algorithm tag>
--   ARGV    = "" (time from Redis TIME), then per limit: algorithm, limit,
--             period (ms), burst (as rrl_burst(): 0 for the window
--             algorithms unless set), cost.
-- It sends the module's headers (X-RateLimit-*, Retry-After) and answers
-- 429 when the script rejects; when Redis fails it passes (fail open, the
-- module's default), after a timeout of 100 ms (the module's default).
-- Client keys are short here: the module's hashing of keys over 128 bytes
-- is not reproduced.
local redis = require "nginx.redis"

local ceil = math.ceil

local _M = {}

local conf = { host = "127.0.0.1", port = 6379, sha = nil, timeout = 100,
               pool_size = 64, idle_timeout = 60000 }

local tags = {
  fixed_window = "fw", sliding_log = "sl", sliding_window = "sw",
  token_bucket = "tb", leaky_bucket = "lb",
}

-- init_by_lua: the Redis address and the script's SHA-1
function _M.configure(c)
  for k, v in pairs(c) do conf[k] = v end
end

-- init_by_lua: a location's limits, their arguments formatted once.
-- Each: { zone = NAME, key = CONSTANT or nil (the request's key),
--         algorithm = NAME, limit = N, period_ms = MS, burst = B, cost = C }
function _M.limits(list)
  local set = { n = #list, zones = {}, constants = {}, args = {}, capacity = {} }
  for i, l in ipairs(list) do
    local tag = assert(tags[l.algorithm], "unknown algorithm")
    local burst = l.burst or (l.algorithm == "token_bucket" and l.limit or 0)
    set.zones[i] = { "rrl:{" .. l.zone .. ":", "}:" .. tag }
    set.constants[i] = l.key
    local a = 5 * (i - 1)
    set.args[a + 1] = l.algorithm
    set.args[a + 2] = tostring(l.limit)
    set.args[a + 3] = tostring(l.period_ms)
    set.args[a + 4] = tostring(burst)
    set.args[a + 5] = tostring(l.cost or 1)
    if l.algorithm == "token_bucket" then
      set.capacity[i] = burst
    elseif l.algorithm == "leaky_bucket" then
      set.capacity[i] = burst + 1
    else
      set.capacity[i] = l.limit + burst
    end
  end
  return set
end

-- access_by_lua: checks the request against a set of limits
function _M.check(set, key)
  if key == nil or key == "" then
    return
  end

  local n = set.n
  local argv = { conf.sha, n }
  for i = 1, n do
    local z = set.zones[i]
    argv[2 + i] = z[1] .. (set.constants[i] or key) .. z[2]
  end
  argv[3 + n] = ""
  local args = set.args
  for i = 1, 5 * n do
    argv[3 + n + i] = args[i]
  end

  local red = redis:new()
  red:set_timeout(conf.timeout)
  local ok, err = red:connect(conf.host, conf.port)
  if not ok then
    ngx.log(ngx.ERR, "rrl_peer: connect: ", err)
    return
  end

  local res
  res, err = red:evalsha(unpack(argv))
  if not res then
    ngx.log(ngx.ERR, "rrl_peer: evalsha: ", err)
    red:close()
    return
  end
  red:set_keepalive(conf.idle_timeout, conf.pool_size)

  if type(res) ~= "table" or #res ~= 2 + 4 * n then
    ngx.log(ngx.ERR, "rrl_peer: unexpected reply")
    return
  end

  -- the headers describe the limit with the lowest remaining
  local now, reported = res[2], 1
  for i = 2, n do
    if res[3 + 4 * (i - 1) + 1] < res[3 + 4 * (reported - 1) + 1] then
      reported = i
    end
  end
  local b = 3 + 4 * (reported - 1)
  local h = ngx.header
  h["X-RateLimit-Limit"] = set.capacity[reported]
  h["X-RateLimit-Remaining"] = res[b + 1]
  h["X-RateLimit-Reset"] = ceil((now + res[b + 2]) / 1000000)

  if res[1] == 1 then
    return
  end

  local wait = 0
  for i = 1, n do
    local o = 3 + 4 * (i - 1)
    if res[o] == 0 and res[o + 3] > wait then wait = res[o + 3] end
  end
  local retry = ceil(wait / 1000000)
  h["Retry-After"] = retry < 1 and 1 or retry
  return ngx.exit(429)
end

return _M
