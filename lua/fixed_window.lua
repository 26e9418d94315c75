-- fixed_window: at most limit+burst per PERIOD, windows aligned on the
-- Unix epoch. State: one string "<window index>:<count>" that expires when
-- its window ends.
local fixed_window = {}

function fixed_window.check(l, now)
  local capacity = l.limit + l.burst
  local window = math.floor(now / l.period)
  local window_end = (window + 1) * l.period
  local count = 0

  local state = redis.call('GET', l.key)
  if state then
    local w, c = string.match(state, '^(%d+):(%d+)$')
    if w and tonumber(w) == window then count = tonumber(c) end
  end

  l.window, l.count, l.ttl = window, count, window_end - now

  if count + l.cost <= capacity then
    return 1, capacity - count - l.cost, window_end - now, 0
  end

  local reset = 0
  if count > 0 then reset = window_end - now end
  local retry = window_end - now
  if l.cost > capacity then retry = l.period end
  -- count may exceed a capacity lowered since it was stored
  return 0, math.max(0, capacity - count), reset, retry
end

function fixed_window.commit(l)
  redis.call('SET', l.key,
    string.format('%d:%d', l.window, l.count + l.cost),
    'PX', math.ceil(l.ttl / 1000))
end
