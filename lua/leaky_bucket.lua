-- leaky_bucket (alias gcra): the generic cell rate algorithm. One request
-- per PERIOD/limit, with burst extra requests of tolerance, like limit_req's
-- "burst=B nodelay". State: the theoretical arrival time (TAT), kept until
-- it is in the past, as "<whole us>[.<fraction>]": a double near 1.7e15
-- cannot hold the fraction of an interval such as 1s/6, so all arithmetic
-- is on "ahead" = TAT - now, which is small.
--
-- A TAT counts units in intervals of the limit it was built with: a zone
-- with overrides=on (l.overrides) stores that limit with it,
-- "<TAT>@<limit>/<period ms>/<burst>". Read under another limit (an
-- override set, changed or deleted), its units carry over: those within
-- the old capacity (at most the new capacity) and a settlement's debt
-- beyond it, in the new interval; so a change takes effect at once, both
-- ways. A TAT without the limit is read as built with the current one.
-- Its functions, made at the first look into the table (lazy(), in
-- common.lua): a call pays for the algorithms it uses alone, the whole
-- script running at each call.
local function make_leaky_bucket(leaky_bucket)
  -- slack, in microseconds, for the rounding of fractional intervals
  local epsilon = 1e-3
  -- the longest wait (us) the module takes: no state is kept longer
  local max_ahead = 3153600000000000

  -- ahead (TAT - now, us) of l's state at now in l's current interval, 0
  -- when none or past
  local function read_ahead(l, state, now)
    local i, f, built = string.match(state or '', '^(%d+)(%.?%d*)(.*)$')
    if not i then return 0 end
    local ahead = (tonumber(i) - now) + tonumber('0' .. f)
    if ahead <= 0 then return 0 end
    if built == '' then return ahead end
    -- the limit the TAT was built with
    local n, p, b = string.match(built, '^@(%d+)/(%d+)/(%d+)$')
    if not n then return 0 end -- not the script's: as none
    n, p, b = tonumber(n), tonumber(p) * 1000, tonumber(b)
    if n * l.period ~= l.limit * p or b ~= l.burst then
      local units = ahead * n / p
      local debt = math.max(0, units - (b + 1))
      units = math.min(units - debt, l.burst + 1) + debt
      ahead = math.min(units * l.period / l.limit, max_ahead)
    end
    return ahead
  end

  function leaky_bucket.check(l, now)
    local interval = l.period / l.limit
    local horizon = (l.burst + 1) * interval
    local ahead = 0 -- TAT - now

    -- l.state: the state a settlement just left (false: none), else read
    local state = l.state
    if state == nil then state = redis.call('GET', l.key) end
    if state then ahead = read_ahead(l, state, now) end

    local new_ahead = ahead + l.cost * interval
    local allowed_in = new_ahead - horizon -- allowed at now + allowed_in

    if allowed_in <= epsilon then
      l.ahead = new_ahead
      -- the slack in units is below 1 unless intervals are under 1 ns
      local remaining = math.min(l.burst + 1 - l.cost,
        math.floor((horizon - new_ahead + epsilon) / interval))
      return 1, math.max(0, remaining), math.ceil(new_ahead - epsilon), 0
    end

    local remaining = math.min(l.burst + 1,
      math.floor((horizon - ahead + epsilon) / interval))
    local retry = l.period
    if l.cost <= l.burst + 1 then retry = math.ceil(allowed_in - epsilon) end

    return 0, math.max(0, remaining), math.max(0, math.ceil(ahead - epsilon)),
      math.max(1, retry)
  end

  -- stores l's TAT now + ahead (ahead > 0), kept until it is past (with
  -- the limit it is built with when the zone has overrides=on)
  local function store_tat(l, now, ahead)
    local whole = math.floor(ahead)
    local frac = string.format('%.9f', ahead - whole)
    if frac == '1.000000000' then whole, frac = whole + 1, '' -- rounded up
    elseif frac == '0.000000000' then frac = ''
    else frac = string.sub(frac, 2) end
    local state = string.format('%d', now + whole) .. frac
    if l.overrides then
      state = state .. string.format('@%d/%d/%d', l.limit, l.period / 1000,
        l.burst)
    end
    redis.call('SET', l.key, state,
      'PX', digits(math.max(1, math.ceil(ahead / 1000))))
    return state
  end

  function leaky_bucket.commit(l, now)
    store_tat(l, now, l.ahead)
  end

  -- Gives back a reservation made at `at`: cost intervals off the TAT, less
  -- the time elapsed since `at`. A bucket without the reservation may have
  -- run empty and restarted later (when another request passed) by up to
  -- that much; the state holds no time to tell. Exact when released at
  -- `at`, or with nothing passed since on a bucket idle before it.
  -- With units (a settlement, whenever `at` was): units intervals off the
  -- TAT (none when it is past); negative, -units intervals onto max(TAT,
  -- now) (a debt held at most 100 years).
  function leaky_bucket.release(l, at, now, units)
    local state = redis.call('GET', l.key)
    l.state = state -- for a check that follows
    local ahead = read_ahead(l, state, now)
    local back
    if units then
      back = units * l.period / l.limit
      if units < 0 then
        ahead = math.min(ahead - back, max_ahead)
        l.state = store_tat(l, now, ahead)
        return true
      end
    else
      back = l.cost * l.period / l.limit - math.max(0, now - at)
    end
    if ahead <= 0 or back <= 0 then return false end
    ahead = ahead - back
    if ahead <= epsilon then
      redis.call('DEL', l.key) -- idle: as no state at all
      l.state = false
    else
      l.state = store_tat(l, now, ahead)
    end
    return true
  end
end
local leaky_bucket = lazy(make_leaky_bucket)
