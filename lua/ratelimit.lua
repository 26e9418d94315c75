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
-- Batch: the checks of several requests in one call (the module sends the
-- requests of one turn of its event loop together). Each is decided alone,
-- in order, exactly as if it were its own check call at the same time.
--   KEYS: every request's keys, request after request.
--   ARGV[1]: "batch"; ARGV[2]: "" or the time in microseconds;
--   ARGV[3]: the number of zones z, then per zone: algorithm, limit,
--     period (ms), burst (as the check's);
--   then per request: its number of limits n, then per limit: its zone
--     (1 to z) and its cost. (Zones once, not per limit: every number is
--     a strtod in Lua, and most of a batch's limits share a few zones.)
--   Reply: each request's check reply, one after another; a request
--     whose commands Redis failed (a key of another type, out of memory)
--     has -1 for passed and for each of its limits' integers.
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

-- a whole number from min to 2^53 (exact in a double), else nil: Lua's
-- tonumber also takes "inf", "nan" and fractions, which no limit is, and
-- every value is checked before anything is written, so that nothing can
-- fail once a request's state has changed
local function whole(v, min)
  if v and v >= min and v <= 9007199254740992 and v % 1 == 0 then return v end
end
local form = ARGV[1]
local release, batch = form == 'release', form == 'batch'

-- the limits whose keys start at KEYS[k] and arguments at ARGV[a]; nil and
-- an error reply when they are not the script's
local function parse(k, a, n)
  local limits = {}
  for i = 1, n do
    local l = {
      key = KEYS[k + i - 1],
      algorithm = algorithms[ARGV[a + 1]],
      limit = whole(tonumber(ARGV[a + 2]), 1),
      period = whole(tonumber(ARGV[a + 3]), 1),
      burst = whole(tonumber(ARGV[a + 4]), 0),
      cost = whole(tonumber(ARGV[a + 5]), 1),
    }
    if not l.algorithm then
      return nil, redis.error_reply('ERR redis_ratelimit: unknown algorithm ' ..
        tostring(ARGV[a + 1]))
    end
    if not (l.limit and l.period and l.burst and l.cost) then
      return nil, redis.error_reply(bad_arguments)
    end
    l.period = l.period * 1000
    limits[i] = l
    a = a + 5
  end
  return limits
end

local function time(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- a request's check: appends its reply to `reply`
local function check(limits, now, reply)
  local at = #reply + 1
  local passed = 1
  reply[at], reply[at + 1] = 0, now
  for i = 1, #limits do
    local ok, remaining, reset, retry = limits[i].algorithm.check(limits[i], now)
    if ok == 0 then passed = 0 end
    local e = at + 4 * i - 2
    reply[e], reply[e + 1], reply[e + 2], reply[e + 3] = ok, remaining, reset, retry
  end
  if passed == 1 then
    for i = 1, #limits do
      limits[i].algorithm.commit(limits[i], now)
    end
  end
  reply[at] = passed
end

if batch then
  -- every request parsed before any is decided: a bad one changes nothing
  local nzones = tonumber(ARGV[3])
  if not nzones or nzones < 1 or nzones % 1 ~= 0
    or 3 + 4 * nzones > #ARGV then
    return redis.error_reply(bad_arguments)
  end
  local zones, a = {}, 4
  for z = 1, nzones do
    local zone = {
      algorithm = algorithms[ARGV[a]],
      limit = whole(tonumber(ARGV[a + 1]), 1),
      period = whole(tonumber(ARGV[a + 2]), 1),
      burst = whole(tonumber(ARGV[a + 3]), 0),
    }
    if not zone.algorithm then
      return redis.error_reply('ERR redis_ratelimit: unknown algorithm ' ..
        ARGV[a])
    end
    if not (zone.limit and zone.period and zone.burst) then
      return redis.error_reply(bad_arguments)
    end
    zone.period = zone.period * 1000
    zones[z] = zone
    a = a + 4
  end
  -- counts, zone numbers and costs repeat ("1"): a table lookup is much
  -- cheaper than tonumber's strtod
  local numbers = {}
  local function number(s)
    local v = numbers[s]
    if v == nil then
      v = tonumber(s) or false
      numbers[s] = v
    end
    return v
  end
  local requests, k, nargv, nkeys = {}, 1, #ARGV, #KEYS
  while a <= nargv do
    local n = number(ARGV[a])
    if not n or n < 1 or n % 1 ~= 0 or k + n - 1 > nkeys
      or a + 2 * n > nargv then
      return redis.error_reply(bad_arguments)
    end
    local limits = {}
    for i = 1, n do
      local zone = zones[number(ARGV[a + 2 * i - 1])]
      local cost = whole(number(ARGV[a + 2 * i]), 1)
      if not (zone and cost) then return redis.error_reply(bad_arguments) end
      limits[i] = {
        key = KEYS[k], algorithm = zone.algorithm, limit = zone.limit,
        period = zone.period, burst = zone.burst, cost = cost,
        -- the algorithms' own fields: setting them never grows the table
        window = false, count = false, ttl = false, current = false,
        prev = false, keep_ttl = false,
      }
      k = k + 1
    end
    requests[#requests + 1] = limits
    a = a + 1 + 2 * n
  end
  if #requests == 0 or k ~= nkeys + 1 then
    return redis.error_reply(bad_arguments)
  end
  local now = time(ARGV[2])
  if not now then return redis.error_reply(bad_arguments) end
  local reply = {}
  for r = 1, #requests do
    local at = #reply
    if not pcall(check, requests[r], now, reply) then
      -- Redis failed a command of this request (a key of another type,
      -- out of memory): the requests before it were written, so the batch
      -- goes on; this one alone gets a reply no decoder takes, passed -1
      for i = at + 1, at + 2 + 4 * #requests[r] do reply[i] = -1 end
      reply[at + 2] = now
    end
  end
  return reply
end

local first = release and 3 or 1 -- ARGV[first]: "" or now; limits follow

if #ARGV ~= first + 5 * #KEYS then
  return redis.error_reply(bad_arguments)
end

local reserved_at = release and tonumber(ARGV[2])
if release and not reserved_at then
  return redis.error_reply(bad_arguments)
end

local now = time(ARGV[first])
if not now then
  return redis.error_reply(bad_arguments)
end

-- every limit parsed before any is touched: a bad one must not leave a
-- release half done
local limits, err = parse(1, first, #KEYS)
if not limits then return err end

if release then
  local changed = 0
  for i = 1, #limits do
    if limits[i].algorithm.release(limits[i], reserved_at, now) then
      changed = changed + 1
    end
  end
  return changed
end

local reply = {}
check(limits, now, reply)
return reply
