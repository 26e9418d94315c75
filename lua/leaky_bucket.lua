-- leaky_bucket (alias gcra): the generic cell rate algorithm. One request
-- per PERIOD/limit, with burst extra requests of tolerance, like limit_req's
-- "burst=B nodelay". State: the theoretical arrival time (TAT), kept until
-- it is in the past, as "<whole us>[.<fraction>]": a double near 1.7e15
-- cannot hold the fraction of an interval such as 1s/6, so all arithmetic
-- is on "ahead" = TAT - now, which is small.
local leaky_bucket = {}

-- slack, in microseconds, for the rounding of fractional intervals
local epsilon = 1e-3

function leaky_bucket.check(l, now)
  local interval = l.period / l.limit
  local horizon = (l.burst + 1) * interval
  local ahead = 0 -- TAT - now

  -- l.state: the state a settlement just left (false: none), else read
  local state = l.state
  if state == nil then state = redis.call('GET', l.key) end
  if state then
    local i, f = string.match(state, '^(%d+)(%.?%d*)$')
    if i then
      i, f = tonumber(i), tonumber('0' .. f)
      if (i - now) + f > 0 then ahead = (i - now) + f end
    end
  end

  local new_ahead = ahead + l.cost * interval
  local allowed_in = new_ahead - horizon -- allowed at now + allowed_in

  if allowed_in <= epsilon then
    l.ahead = new_ahead
    local remaining = math.floor((horizon - new_ahead + epsilon) / interval)
    return 1, math.max(0, remaining), math.ceil(new_ahead - epsilon), 0
  end

  local remaining = math.floor((horizon - ahead + epsilon) / interval)
  local retry = l.period
  if l.cost <= l.burst + 1 then retry = math.ceil(allowed_in - epsilon) end

  return 0, math.max(0, remaining), math.max(0, math.ceil(ahead - epsilon)),
    math.max(1, retry)
end

-- stores the TAT now + ahead (ahead > 0), kept until it is past
local function store_tat(key, now, ahead)
  local whole = math.floor(ahead)
  local frac = string.format('%.9f', ahead - whole)
  if frac == '1.000000000' then whole, frac = whole + 1, '' -- rounded up
  elseif frac == '0.000000000' then frac = ''
  else frac = string.sub(frac, 2) end
  local state = string.format('%d', now + whole) .. frac
  redis.call('SET', key, state, 'PX', math.max(1, math.ceil(ahead / 1000)))
  return state
end

function leaky_bucket.commit(l, now)
  store_tat(l.key, now, l.ahead)
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
  local i, f = string.match(state or '', '^(%d+)(%.?%d*)$')
  local ahead = 0
  if i then ahead = (tonumber(i) - now) + tonumber('0' .. f) end
  local back
  if units then
    back = units * l.period / l.limit
    if units < 0 then
      ahead = math.min(math.max(0, ahead) - back, 3153600000000000)
      l.state = store_tat(l.key, now, ahead)
      return true
    end
  else
    back = l.cost * l.period / l.limit - math.max(0, now - at)
  end
  if not i or ahead <= 0 or back <= 0 then return false end
  ahead = ahead - back
  if ahead <= epsilon then
    redis.call('DEL', l.key) -- idle: as no state at all
    l.state = false
  else
    l.state = store_tat(l.key, now, ahead)
  end
  return true
end
