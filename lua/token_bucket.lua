-- token_bucket: a bucket of burst tokens (default: limit), refilled
-- continuously at limit per PERIOD; a request takes cost tokens. State: one
-- string "<tokens>:<time>", kept until the bucket would be full again.
local token_bucket = {}

-- slack for floating point, in time (microseconds), not in tokens: a slack
-- in tokens would be a long time at slow rates
local slack = 1e-3

function token_bucket.check(l, now)
  local capacity = l.burst
  local tokens = capacity

  local state = redis.call('GET', l.key)
  if state then
    local t, at = string.match(state, '^([^:]+):(%d+)$')
    t, at = tonumber(t), tonumber(at)
    if t and at then
      tokens = math.min(capacity, t + math.max(0, now - at) * l.limit / l.period)
    end
  end

  -- microseconds until there are n tokens (0 if there are)
  local function wait(n)
    return math.max(0, math.ceil((n - tokens) * l.period / l.limit - slack))
  end
  local per_slack = slack * l.limit / l.period

  if l.cost <= capacity and wait(l.cost) == 0 then
    local left = math.max(0, tokens - l.cost)
    l.left = left
    tokens = left
    l.full_in = wait(capacity)
    return 1, math.floor(left + per_slack), l.full_in, 0
  end

  local retry = l.period
  if l.cost <= capacity then retry = wait(l.cost) end

  return 0, math.floor(tokens + per_slack), wait(capacity), math.max(1, retry)
end

function token_bucket.commit(l, now)
  redis.call('SET', l.key, string.format('%.17g:%d', l.left, now),
    'PX', math.max(1, math.ceil(l.full_in / 1000)))
end

-- Gives back a reservation made at `at`: cost tokens, added at the stored
-- time. Exact while the state is the reservation's (stored at `at`); if
-- others passed since, a bucket without the reservation may have
-- overflowed by up to what refilled in between: that much is kept back.
function token_bucket.release(l, at, now)
  local t, stored_at = string.match(redis.call('GET', l.key) or '',
    '^([^:]+):(%d+)$')
  t, stored_at = tonumber(t), tonumber(stored_at)
  if not (t and stored_at) or stored_at < at then return false end
  local back = l.cost - (stored_at - at) * l.limit / l.period
  local refilled = math.max(0, now - stored_at) * l.limit / l.period
  -- full again by now: nothing of the reservation counts any more
  if back <= 0 or t + refilled >= l.burst then return false end
  t = math.min(l.burst, t + back)
  local full_in =
    math.ceil((l.burst - t - refilled) * l.period / l.limit - slack)
  if full_in <= 0 then
    redis.call('DEL', l.key) -- full: as no state at all
  else
    redis.call('SET', l.key, string.format('%.17g:%d', t, stored_at),
      'PX', math.ceil(full_in / 1000))
  end
  return true
end
