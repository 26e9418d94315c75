-- The driver: checks every limit of a request, then commits all of them only
-- if all passed, so a rejected request consumes from none. Atomic as one
-- script. Time comes from Redis TIME unless injected (tests).
--
-- Check:
--   KEYS[i]: the state of limit i.
--   ARGV[1]: "" or the time in microseconds;
--   ARGV[2 + 5(i-1) ..]: algorithm, limit, period (ms), burst (as the
--     algorithm uses it: see rrl_burst()), cost.
--   Reply: passed, now (us), then per limit:
--     passed, remaining, reset after (us), retry after (us).
--
-- Release: gives back what a passed check (a reservation) took, as far as
-- it still counts. With Redis Cluster a request's limits live in several
-- hash slots, one call each; when one slot rejects (or fails), the slots
-- that passed are released, so a rejected request consumes from no limit.
--   KEYS: as the check that reserved (same keys, same order).
--   ARGV[1]: "release";
--   ARGV[2]: the reservation's time (us): element 2 of the check's reply;
--   ARGV[3]: "" or the time in microseconds;
--   ARGV[4 + 5(i-1) ..]: as the check's (same cost).
--   Reply: the number of limits whose state was changed.
--   Never creates a key, never leaves a state more generous than if the
--   reserved request had never come; release a reservation once only.
--
-- Bad arguments change nothing: 'ERR redis_ratelimit: bad arguments' or
-- 'ERR redis_ratelimit: unknown algorithm <name>'.
local algorithms = {
  fixed_window = fixed_window,
  sliding_log = sliding_log,
  sliding_window = sliding_window,
  token_bucket = token_bucket,
  leaky_bucket = leaky_bucket,
}

local bad_arguments = 'ERR redis_ratelimit: bad arguments'
local release = ARGV[1] == 'release'
local first = release and 3 or 1 -- ARGV[first]: "" or now; limits follow

if #ARGV ~= first + 5 * #KEYS then
  return redis.error_reply(bad_arguments)
end

local reserved_at = release and tonumber(ARGV[2])
if release and not reserved_at then
  return redis.error_reply(bad_arguments)
end

local now
if ARGV[first] ~= '' then
  now = tonumber(ARGV[first])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
if not now then
  return redis.error_reply(bad_arguments)
end

-- every limit parsed before any is touched: a bad one must not leave a
-- release half done
local limits = {}
for i = 1, #KEYS do
  local a = first + 5 * (i - 1)
  local l = {
    key = KEYS[i],
    algorithm = algorithms[ARGV[a + 1]],
    limit = tonumber(ARGV[a + 2]),
    period = tonumber(ARGV[a + 3]),
    burst = tonumber(ARGV[a + 4]),
    cost = tonumber(ARGV[a + 5]),
  }
  if not l.algorithm then
    return redis.error_reply('ERR redis_ratelimit: unknown algorithm ' .. ARGV[a + 1])
  end
  if not (l.limit and l.period and l.burst and l.cost) then
    return redis.error_reply(bad_arguments)
  end
  l.period = l.period * 1000
  limits[i] = l
end

if release then
  local changed = 0
  for i = 1, #limits do
    if limits[i].algorithm.release(limits[i], reserved_at, now) then
      changed = changed + 1
    end
  end
  return changed
end

local reply, passed = { 0, now }, 1

for i = 1, #limits do
  local ok, remaining, reset, retry = limits[i].algorithm.check(limits[i], now)
  if ok == 0 then passed = 0 end
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
