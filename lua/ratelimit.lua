-- The driver: checks every limit of a request, then commits all of them only
-- if all passed, so a rejected request consumes from none. Atomic as one
-- script. Time comes from Redis TIME unless ARGV[1] injects one (tests).
--
-- KEYS[i]: the state of limit i.
-- ARGV[1]: "" or the time in microseconds;
-- ARGV[2 + 5(i-1) ..]: algorithm, limit, period (ms), burst (as the
--   algorithm uses it: see rrl_burst()), cost.
-- Reply: passed, now (us), then per limit:
--   passed, remaining, reset after (us), retry after (us).
local algorithms = {
  fixed_window = fixed_window,
  sliding_log = sliding_log,
  sliding_window = sliding_window,
  token_bucket = token_bucket,
  leaky_bucket = leaky_bucket,
}

local now
if ARGV[1] ~= '' then
  now = tonumber(ARGV[1])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

if #ARGV ~= 1 + 5 * #KEYS or not now then
  return redis.error_reply('ERR redis_ratelimit: bad arguments')
end

local limits, reply, passed = {}, { 0, now }, 1

for i = 1, #KEYS do
  local a = 1 + 5 * (i - 1)
  local l = {
    key = KEYS[i],
    algorithm = algorithms[ARGV[a + 1]],
    limit = tonumber(ARGV[a + 2]),
    period = tonumber(ARGV[a + 3]) * 1000,
    burst = tonumber(ARGV[a + 4]),
    cost = tonumber(ARGV[a + 5]),
  }
  if not l.algorithm then
    return redis.error_reply('ERR redis_ratelimit: unknown algorithm ' .. ARGV[a + 1])
  end

  local ok, remaining, reset, retry = l.algorithm.check(l, now)
  if ok == 0 then passed = 0 end
  limits[i] = l
  reply[#reply + 1] = ok
  reply[#reply + 1] = remaining
  reply[#reply + 1] = reset
  reply[#reply + 1] = retry
end

if passed == 1 then
  for i = 1, #limits do
    limits[i].algorithm.commit(limits[i], now)
  end
end

reply[1] = passed
return reply
