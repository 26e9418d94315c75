-- The driver: checks every limit of a request, then commits all of them only
-- if all passed, so a rejected request consumes from none. Atomic as one
-- script. Time comes from Redis TIME unless injected (tests).
--
-- Check:
--   KEYS[i]: the state of limit i.
--   ARGV[1]: "" or the time in microseconds;
--   ARGV[2 + 5(i-1) ..]: algorithm, limit, period (ms), burst (as the
--     algorithm uses it: see rrl_burst()), cost. The algorithm's name ends
--     in "+overrides" for a zone with overrides=on, in "+lease" for one
--     with lease= (fixed_window, sliding_window, token_bucket; never both).
--   Reply: passed, now (us), then per limit:
--     passed, remaining, reset after (us), retry after (us);
--     and for a limit whose zone has overrides=on, 4 more: the override's
--     kind (0 none, 1 rate, 2 unlimited, 3 block, 4 invalid), then the
--     limit, period (ms) and burst applied (block: 0, the zone's period, 0);
--     and for a lease limit, 2 more: G, the units granted, and the lease's
--     life (us from now); 0, 0 when the limit did not pass.
--
-- Leases: a lease limit's cost is "C:W:B:T", four whole numbers: C the
-- request's cost (0: a renewal in the background), W >= max(C, 1) the
-- units wanted, B the units left of an ended lease of this server, given
-- back, taken at Redis time T (us; 0 when B is 0). In order:
--   1. B > 0: given back as the algorithm's release would (fixed_window
--      only while T's window is current; sliding_window: the current
--      count, or prev once the state moved on; token_bucket: tokens =
--      min(burst - held, tokens + B) whenever T was), whatever follows;
--   2. a check of cost max(C, 1); on a pass, G = min(W, available): the
--      most units the algorithm lets pass now;
--   3. all or nothing as ever: G is committed (not C) only when every
--      limit of the request passed. A lease limit that passed in a
--      request that did not still reports its G: it was not taken.
--   remaining: after G when passed, else as a check of max(C, 1); reset
--   after: as a pass of G; retry after: as a check of max(C, 1). The life:
--   until the current window's end (fixed_window, sliding_window), 100 ms
--   (token_bucket; its held units: see token_bucket.lua).
-- A renewal ahead, "0:W:0:0:1" (fixed_window, sliding_window): G =
--   min(W, available) units of the window after the current one, counted
--   as that window's (in the state's key + ":ahead": see the algorithm's
--   file) before it starts; refused when none is left (fixed_window: the
--   units taken ahead for it; sliding_window: those and the current
--   window's count, which weighs in full at its start). remaining: what
--   that window has left after G; the life: until that window's end.
--
-- Overrides: the key's hash tag + ":limit" ("rrl:{ZONE:KEY}:limit", the
-- state's slot) may hold "Nr/PERIOD [burst=B]" (this key's own limit, in
-- the zone's algorithm), "unlimited" (passes, counts nothing) or "block"
-- (rejected, counts nothing; retry after the key's TTL, else the zone's
-- period). Any other value is invalid: the zone's own limit applies. A
-- key's state is kept across a change of its override (leaky_bucket's
-- carries its units over: see leaky_bucket.lua). Whatever the limit, a
-- reply's remaining is at most the applied limit's capacity.
--
-- Release: gives back what a passed check (a reservation) took, as far as
-- it still counts. With Redis Cluster a request's limits live in several
-- hash slots, one call each; when one slot rejects (or fails), the slots
-- that passed are released, so a rejected request consumes from no limit.
--   KEYS: as the check that reserved (same keys, same order).
--   ARGV[1]: "release";
--   ARGV[2]: the reservation's time (us): element 2 of the check's reply;
--   ARGV[3]: "" or the time in microseconds;
--   ARGV[4 + 5(i-1) ..]: as the check's (same cost). A lease limit's
--     "C:W:B:T" gives back C only: its G - C more stay taken (strict), and
--     B is not given back.
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
--     (1 to z) and its cost ("C:W:B:T" for a lease zone). (Zones once,
--     not per limit: every number is a strtod in Lua, and most of a
--     batch's limits share a few zones.) "*<r>" before a request's count:
--     r requests in a row of that one shape (count, zones, costs), each
--     with its own keys, in turn: a batch's requests mostly have the same
--     (Redis makes an object of each argument, and Lua a string).
--   Reply: each request's check reply, one after another; a request
--     whose commands Redis failed (a key of another type, out of memory)
--     has -1 for passed and for each of its limits' integers (all 4, 8 or
--     6 of each).
--
-- Settle: a request's actual cost A against the estimate E it was charged
-- up front (settle= of the module), in Redis's time T of the charge.
--   KEYS: as the check's.
--   ARGV[1]: "settle" (now: Redis TIME);
--   ARGV[2 + 5(i-1) ..]: as the check's, but the cost is "E:A:T", three
--     whole numbers (E, A, T >= 0); a zone with overrides=on may have
--     "E:A:T:N:P:B", the limit the charge applied (N, P ms >= 1, B >= 0:
--     an override's rate, or the zone's own). In a batch, a settlement's
--     count is "s<n>" (e.g. "s2") instead of <n>, then per limit its zone
--     and its field; checks and settlements mix, in order.
--   Per limit, D = A - E (0: nothing changes) is settled as the algorithm's
--   release of -D units (see each file): a refund (D < 0) where the units
--   still count (fixed_window: T's window while current; sliding_window:
--   T's window's count while the state holds it; token_bucket: as the
--   release, exact while the state is the charge's; leaky_bucket: the TAT
--   back by -D intervals; sliding_log: -D entries at T while in the
--   window), else dropped; a charge (D > 0) even beyond the limit: a debt
--   (fixed_window, sliding_window: to T's window's count, else the
--   current one's; token_bucket: tokens below zero, repaid at the rate;
--   leaky_bucket: TAT = max(TAT, now) + D intervals; sliding_log: D
--   entries, never more than the log's capacity: a debt beyond one window
--   is not held). A debt is held at most 100 years: a bucket's debt whose
--   repayment at the rate would take longer is held as one of 100 years,
--   so every wait of a reply stays within what the module takes.
--   overrides=on: with N:P:B, settled with that limit, whatever is in
--   force now (the module sends no settlement for a charge made under
--   unlimited: it took nothing); without, the override in force now
--   (unlimited, block: nothing settled; a rate: its numbers). The reply's
--   check is one under the override in force now. A lease zone ("+lease"):
--   as its algorithm, held units unchanged.
--   Reply: a check's with 4 integers per limit whatever the zone: the
--     check of cost max(E, 1) after the settlement, not committed (a debt
--     is rejected as a check would be, with its retry after). A batch's
--     settlement that Redis failed: -1 for passed and all 4 of each limit.
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
local suffix = '+overrides'
local lease_suffix = '+lease'

-- Leases' functions, made with the first lease zone of a call (in
-- algorithm_of): a script's every function is made again at each call
-- (some 70 ns each), and the calls without leases would pay for them.
local lease_fields, check_lease

-- the algorithm named, its name when the zone has overrides=on (the name
-- ends in the suffix), and whether the zone has lease= (the name ends in
-- "+lease"; only for an algorithm that leases): looked at only when the
-- name is not found
local function algorithm_of(name)
  local a = algorithms[name]
  if a or type(name) ~= 'string' then return a, false, false end
  if #name > #suffix and name:sub(-#suffix) == suffix then
    local base = name:sub(1, -#suffix - 1)
    return algorithms[base], base, false
  end
  if #name > #lease_suffix and name:sub(-#lease_suffix) == lease_suffix then
    a = algorithms[name:sub(1, -#lease_suffix - 1)]
    if a and a.leases then
      if a.make_leases then a.make_leases() end
      if not check_lease then
        -- The cost field "C:W:B:T" of a lease limit into l (cost C, want
        -- W, back B, back_at T), or a renewal's ahead, "0:W:0:0:1"
        -- (l.next_window; a window's algorithm); false when it is not four
        -- whole numbers with W >= max(C, 1), or not such a renewal.
        lease_fields = function(l, field)
          local c, w, b, t = string.match(field, '^(%d+):(%d+):(%d+):(%d+)$')
          if not c then
            c, w, b, t = string.match(field, '^(0):(%d+):(0):(0):1$')
            if not c or l.algorithm.leases ~= 'window' then return false end
            l.next_window = true
          end
          c, b, t = whole(number(c), 0), whole(number(b), 0),
            whole(number(t), 0)
          if not (c and b and t) then return false end
          w = whole(number(w), math.max(c, 1))
          if not w then return false end
          l.cost, l.want, l.back, l.back_at = c, w, b, t
          return true
        end
        -- The check of a lease limit: gives B back (whatever follows),
        -- checks a cost of max(C, 1), and on a pass grants G = min(W,
        -- available), which its commit takes instead of the cost: the
        -- algorithm's check's four values, G and the lease's life (us);
        -- 0, 0 when refused.
        check_lease = function(l, now)
          local al = l.algorithm
          -- units for the next window: counted as its, taken before it
          if l.next_window then return al.ahead(l, now) end
          if l.back > 0 then al.giveback(l, l.back_at, now, l.back) end
          local cost = math.max(l.cost, 1)
          l.cost = cost
          local ok, remaining, reset, retry = al.check(l, now)
          if ok == 0 then return 0, remaining, reset, retry, 0, 0 end
          -- a check that passes leaves remaining = available - cost
          local granted = math.min(l.want, remaining + cost)
          local life
          if al.leases == 'window' then
            -- fixed_window, sliding_window: any pass has the same reset
            -- after; the lease lives until the current window's end
            l.cost = granted
            life = (l.window + 1) * l.period - now
          else
            reset, life = al.lease(l, granted, now)
          end
          return 1, remaining + cost - granted, reset, 0, granted, life
        end
      end
      return a, false, true
    end
  end
  return nil, false, false
end

local units = { ms = 1, s = 1000, m = 60000, h = 3600000, d = 86400000,
  w = 604800000 }
-- N and B as a zone's rate= and burst= may have them: sums stay exact
local max_count = 1000000000
local max_state_ms = 100 * 365 * 86400 * 1000

-- the PERIOD of a rate as the zone's rate= has it ("s", "10s", "1m30s",
-- "10": seconds), in ms, or nil
local function period_ms(text)
  if text ~= 'ms' and units[text] then return units[text] end
  local total, previous, i = 0, math.huge, 1
  if text == '' then return nil end
  while i <= #text do
    local digits, unit, next_i = text:match('^(%d+)(%a*)()', i)
    if not digits then return nil end
    local scale = unit == '' and 1000 or units[unit]
    -- each unit smaller than the one before, as the zone's
    if not scale or scale >= previous then return nil end
    previous = scale
    total = total + tonumber(digits) * scale
    if total > max_state_ms then return nil end
    i = next_i
  end
  return total
end

-- an override's value for algorithm name: { kind, limit, period (ms),
-- burst }; kind 4 (invalid) when it is none of the forms or out of bounds
local invalid = { kind = 4 }
local function read_override(value, name)
  -- blanks around it dropped (in linear time, whatever the value)
  local v = value:match('^%s*(.*%S)') or ''
  if v == 'unlimited' then return { kind = 2 } end
  if v == 'block' then return { kind = 3 } end
  local n, period, rest = v:match('^(%d+)r/(%w+)(.*)$')
  if not n then return invalid end
  n, period = tonumber(n), period_ms(period)
  local burst
  if rest ~= '' then
    burst = rest:match('^%s+burst=(%d+)$')
    if not burst then return invalid end
    burst = tonumber(burst)
  elseif name == 'token_bucket' then
    burst = n
  else
    burst = 0
  end
  if not period or period < 1 or n < 1 or n > max_count
    or burst > max_count then
    return invalid
  end
  local capacity, lifetime = n + burst, period
  if name == 'token_bucket' then capacity = burst end
  if name == 'leaky_bucket' then capacity = burst + 1 end
  if name == 'sliding_window' then lifetime = 2 * period end
  if name == 'token_bucket' or name == 'leaky_bucket' then
    lifetime = math.max(period, capacity * period / n)
  end
  if capacity < 1 or lifetime > max_state_ms
    or (name == 'sliding_log' and capacity > 10000) then
    return invalid
  end
  return { kind = 1, limit = n, period = period, burst = burst }
end

-- a call reads the same values often (a batch): each parsed once
local read = {}

-- The override of limit l (its zone's overrides=on) applied to l: its
-- kind. A rate replaces l's limit, period and burst; a block keeps its
-- key in l.block_key.
local function override(l)
  local tag = l.key:match('^(.*})')
  if not tag then return 0 end -- not a key of the module's
  local key = tag .. ':limit'
  local value = redis.pcall('GET', key)
  if not value then return 0 end
  if type(value) ~= 'string' then return 4 end -- a key of another type
  local cached = l.overrides .. ' ' .. value
  local o = read[cached]
  if not o then
    o = read_override(value, l.overrides)
    read[cached] = o
  end
  if o.kind == 1 then
    l.limit, l.period, l.burst = o.limit, o.period * 1000, o.burst
  elseif o.kind == 3 then
    l.block_key = key
  end
  return o.kind
end

local form = ARGV[1]
local release, batch = form == 'release', form == 'batch'
local settling = form == 'settle'
-- a settlement's cost field "E:A:T", of an overrides=on zone's limit also
-- "E:A:T:N:P:B"
local settle_field = '^(%d+):(%d+):(%d+)$'
local charged_field = '^(%d+):(%d+):(%d+):(%d+):(%d+):(%d+)$'

-- The fields of a settlement into l (its zone's overrides known); false
-- when they are not the form's.
local function settle_fields(l, field)
  local e, x, t = string.match(field, settle_field)
  local n, p, b
  if not e and l.overrides then
    e, x, t, n, p, b = string.match(field, charged_field)
    n, p, b = whole(number(n), 1), whole(number(p), 1), whole(number(b), 0)
    if not (n and p and b) then return false end
    l.charged = { n, p * 1000, b }
  end
  e, x, t = whole(number(e), 0), whole(number(x), 0), whole(number(t), 0)
  if not (e and x and t) then return false end
  l.estimate, l.actual, l.at, l.cost = e, x, t, math.max(e, 1)
  return true
end

-- the limits whose keys start at KEYS[k] and arguments at ARGV[a]; nil and
-- an error reply when they are not the script's
local function parse(k, a, n)
  local limits = {}
  for i = 1, n do
    local algorithm, overrides, lease = algorithm_of(ARGV[a + 1])
    local l = {
      key = KEYS[k + i - 1],
      algorithm = algorithm,
      overrides = overrides,
      lease = lease,
      limit = whole(tonumber(ARGV[a + 2]), 1),
      period = whole(tonumber(ARGV[a + 3]), 1),
      burst = whole(tonumber(ARGV[a + 4]), 0),
      cost = not lease and not settling and whole(tonumber(ARGV[a + 5]), 1),
    }
    -- "E:A:T[:N:P:B]", the check of the reply of cost max(E, 1)
    if settling then settle_fields(l, ARGV[a + 5]) end
    if not l.algorithm then
      return nil, redis.error_reply('ERR redis_ratelimit: unknown algorithm ' ..
        tostring(ARGV[a + 1]))
    end
    if lease and not settling and not lease_fields(l, ARGV[a + 5]) then
      return nil, redis.error_reply(bad_arguments)
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

-- the check of a limit whose zone has overrides=on: the algorithm's
-- check's four values, and the override's kind (read unless given)
local function check_override(l, now, kind)
  kind = kind or override(l)
  l.kind = kind
  if kind == 2 then return 1, 0, 0, 0, kind end
  if kind == 3 then
    local wait = l.period
    local ttl = redis.call('PTTL', l.block_key)
    if ttl > 0 then wait = math.min(ttl * 1000, max_state_ms * 1000) end
    return 0, 0, wait, wait, kind
  end
  local ok, remaining, reset, retry = l.algorithm.check(l, now)
  return ok, remaining, reset, retry, kind
end

-- a request's check: appends its reply to `reply`
local function check(limits, now, reply)
  local at = #reply + 1
  local passed = 1
  reply[at], reply[at + 1] = 0, now
  local e = at + 2
  for i = 1, #limits do
    local l = limits[i]
    local ok, remaining, reset, retry, kind, granted, life
    if l.lease then
      ok, remaining, reset, retry, granted, life = check_lease(l, now)
    elseif l.overrides then
      ok, remaining, reset, retry, kind = check_override(l, now)
    else
      ok, remaining, reset, retry = l.algorithm.check(l, now)
    end
    if ok == 0 then passed = 0 end
    reply[e], reply[e + 1], reply[e + 2], reply[e + 3] =
      ok, remaining, reset, retry
    e = e + 4
    if l.lease then
      reply[e], reply[e + 1] = granted, life
      e = e + 2
    elseif l.overrides then
      local limit, burst = l.limit, l.burst
      if kind == 3 then limit, burst = 0, 0 end
      reply[e], reply[e + 1], reply[e + 2], reply[e + 3] =
        kind, limit, l.period / 1000, burst
      e = e + 4
    end
  end
  if passed == 1 then
    for i = 1, #limits do
      local l = limits[i]
      if l.next_window then
        l.algorithm.commit_ahead(l, now)
      elseif l.kind ~= 2 then
        l.algorithm.commit(l, now)
      end
    end
  end
  reply[at] = passed
end

-- a batch's requests, and whether a settlement is among them; a request of
-- one plain fixed_window or sliding_window limit is its zone, its key and
-- cost in one_key and one_cost
local requests, settles
local one_key, one_cost = {}, {}
if batch then
  -- every request parsed before any is decided: a bad one changes nothing
  local nzones = tonumber(ARGV[3])
  if not nzones or nzones < 1 or nzones % 1 ~= 0
    or 3 + 4 * nzones > #ARGV then
    return redis.error_reply(bad_arguments)
  end
  -- a limit's table, its algorithm's own fields set: setting them never
  -- grows it
  local function limit_of(zone, key, cost)
    return {
      key = key, algorithm = zone.algorithm, limit = zone.limit,
      period = zone.period, burst = zone.burst, cost = cost,
      overrides = zone.overrides,
      window = false, count = false, ttl = false, current = false,
      prev = false, keep_ttl = false,
    }
  end
  local zones, a = {}, 4
  for z = 1, nzones do
    local algorithm, overrides, lease = algorithm_of(ARGV[a])
    local zone = {
      algorithm = algorithm,
      overrides = overrides,
      lease = lease,
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
    if (algorithm == fixed_window or algorithm == sliding_window)
      and not overrides and not lease then
      -- its requests of this one limit: checked in this table, in turn
      zone.scratch = limit_of(zone, false, false)
    end
    zones[z] = zone
    a = a + 4
  end
  -- counts, zone numbers and costs repeat ("1"): number() converts each
  -- once (common.lua)
  local k, nargv, nkeys = 1, #ARGV, #KEYS
  requests = {}
  while a <= nargv do
    local n = number(ARGV[a])
    local settle, run = false, 1
    if not n then
      local r = string.match(ARGV[a], '^%*(%d+)$')
      if r then
        -- "*<r>": the next request's shape, r requests in a row
        run, a = number(r), a + 1
        n = number(ARGV[a])
      else
        -- a settlement's "s<n>"
        n = string.match(ARGV[a], '^s(%d+)$')
        n, settle = n and tonumber(n), true
        settles = true
      end
    end
    if not n or n < 1 or n % 1 ~= 0 or run < 1 or run % 1 ~= 0
      or k + run * n - 1 > nkeys or a + 2 * n > nargv then
      return redis.error_reply(bad_arguments)
    end
    local zone = n == 1 and not settle and zones[number(ARGV[a + 1])]
    local cost = zone and zone.scratch and whole(number(ARGV[a + 2]), 1)
    for _ = 1, cost and run or 0 do
      -- one plain limit: its zone (its scratch), key and cost, no table
      local r = #requests + 1
      requests[r], one_key[r], one_cost[r] = zone, KEYS[k], cost
      k = k + 1
    end
    for _ = 1, cost and 0 or run do
      local limits = {}
      for i = 1, n do
        local zone = zones[number(ARGV[a + 2 * i - 1])]
        if not zone then return redis.error_reply(bad_arguments) end
        if settle then
          -- "E:A:T[:N:P:B]": a lease zone's as its algorithm's
          local l = {
            key = KEYS[k], algorithm = zone.algorithm, limit = zone.limit,
            period = zone.period, burst = zone.burst, cost = false,
            overrides = zone.overrides, estimate = false, actual = false,
            at = false, charged = false, window = false, count = false,
            ttl = false, current = false, prev = false, keep_ttl = false,
            lease = zone.lease, next = false, folded = false,
          }
          if not settle_fields(l, ARGV[a + 2 * i]) then
            return redis.error_reply(bad_arguments)
          end
          limits[i] = l
        elseif zone.lease then
          -- "C:W:B:T"
          local l = {
            key = KEYS[k], algorithm = zone.algorithm, limit = zone.limit,
            period = zone.period, burst = zone.burst, lease = true,
            cost = false, want = false, back = false, back_at = false,
            next_window = false, next = false, folded = false,
            window = false, count = false, ttl = false, current = false,
            prev = false, keep_ttl = false,
          }
          if not lease_fields(l, ARGV[a + 2 * i]) then
            return redis.error_reply(bad_arguments)
          end
          limits[i] = l
        else
          local cost = whole(number(ARGV[a + 2 * i]), 1)
          if not cost then return redis.error_reply(bad_arguments) end
          limits[i] = limit_of(zone, KEYS[k], cost)
        end
        k = k + 1
      end
      if settle then limits.settle = true end
      requests[#requests + 1] = limits
    end
    a = a + 1 + 2 * n
  end
  if #requests == 0 or k ~= nkeys + 1 then
    return redis.error_reply(bad_arguments)
  end
end

-- Settlements' function, made only when one is to be done: a script's
-- every function is made again at each call.
-- A request's settlement (its limits parsed with estimate, actual and
-- at): appends its reply to `reply`.
local settle
if settling or settles then
  settle = function(limits, now, reply)
    local at = #reply + 1
    local passed = 1
    reply[at], reply[at + 1] = 0, now
    local e = at + 2
    for i = 1, #limits do
      local l = limits[i]
      -- the zone's capacity (an override may be larger): the module
      -- takes no remaining above it, and the reply only tells a debt
      local capacity = l.limit + l.burst
      if l.overrides == 'token_bucket' then capacity = l.burst end
      if l.overrides == 'leaky_bucket' then capacity = l.burst + 1 end
      local kind = l.overrides and override(l) or 0
      if l.charged and l.actual ~= l.estimate then
        -- with the limit the charge applied, whatever is in force now;
        -- the check below as one now
        local limit, period, burst = l.limit, l.period, l.burst
        l.limit, l.period, l.burst = l.charged[1], l.charged[2], l.charged[3]
        l.algorithm.release(l, l.at, now, l.estimate - l.actual)
        l.limit, l.period, l.burst = limit, period, burst
      elseif kind ~= 2 and kind ~= 3 and l.actual ~= l.estimate then
        -- unlimited, block: the charge took nothing
        l.algorithm.release(l, l.at, now, l.estimate - l.actual)
      end
      local ok, remaining, reset, retry
      if l.overrides then
        ok, remaining, reset, retry = check_override(l, now, kind)
        remaining = math.min(remaining, capacity)
      else
        ok, remaining, reset, retry = l.algorithm.check(l, now)
      end
      if ok == 0 then passed = 0 end
      reply[e], reply[e + 1], reply[e + 2], reply[e + 3] =
        ok, remaining, reset, retry
      e = e + 4
    end
    reply[at] = passed
  end
end

if batch then
  local now = time(ARGV[2])
  if not now then return redis.error_reply(bad_arguments) end
  local reply = {}
  -- A request of one plain fixed_window or sliding_window limit, the most
  -- of a batch: check() of it in its zone's scratch table, not a table of
  -- its own.
  local function check_one(zone, key, cost)
    local l, al = zone.scratch, zone.algorithm
    l.key, l.cost, l.state, l.keep_ttl = key, cost, nil, false
    local ok, remaining, reset, retry = al.check(l, now)
    if ok == 1 then al.commit(l, now) end
    local e = #reply + 1
    reply[e], reply[e + 1], reply[e + 2], reply[e + 3], reply[e + 4],
      reply[e + 5] = ok, now, ok, remaining, reset, retry
  end
  for r = 1, #requests do
    local at = #reply
    local limits = requests[r]
    local done
    if limits.scratch then
      done = pcall(check_one, limits, one_key[r], one_cost[r])
    else
      done = pcall(limits.settle and settle or check, limits, now, reply)
    end
    if not done then
      -- Redis failed a command of this request (a key of another type,
      -- out of memory): the requests before it were written, so the batch
      -- goes on; this one alone gets a reply no decoder takes, passed -1
      local width = limits.scratch and 6 or 2
      for _, l in ipairs(limits) do
        width = width +
          ((limits.settle and 4) or (l.overrides and 8) or (l.lease and 6) or 4)
      end
      for i = at + 1, at + width do reply[i] = -1 end
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

local now = time(settling and '' or ARGV[first])
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
    local l = limits[i]
    -- an unlimited or blocked key's reservation took nothing; a lease
    -- limit's gives back its cost C alone (a renewal's: nothing)
    local kind = l.overrides and override(l) or 0
    if kind ~= 2 and kind ~= 3 and l.cost > 0
      and l.algorithm.release(l, reserved_at, now) then
      changed = changed + 1
    end
  end
  return changed
end

local reply = {}
if settling then
  settle(limits, now, reply)
else
  check(limits, now, reply)
end
return reply
