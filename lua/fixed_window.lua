-- fixed_window: at most limit+burst per PERIOD, windows aligned on the
-- Unix epoch. State: one string "<window index>:<count>" that expires when
-- its window ends. A lease (lease=) counts its units as that many requests
-- and lives until the window's end.
-- Its functions, made at the first look into the table (lazy(), in
-- common.lua): a call pays for the algorithms it uses alone, the whole
-- script running at each call.
local function make_fixed_window(fixed_window)
  function fixed_window.check(l, now)
    local capacity = l.limit + l.burst
    local window = math.floor(now / l.period)
    local window_end = (window + 1) * l.period
    local count = 0

    -- l.state: the state a settlement just left (false: none), else read
    local state = l.state
    if state == nil then state = redis.call('GET', l.key) end
    if state then
      local w, c = string.match(state, '^(%d+):(%d+)$')
      if w and number(w) == window then
        count = number(c)
        -- it expires at this window's end already: KEEPTTL costs Redis less
        l.keep_ttl = true
      end
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
    local state = digits(l.window) .. ':' .. digits(l.count + l.cost)
    if l.keep_ttl then
      redis.call('SET', l.key, state, 'KEEPTTL')
    else
      redis.call('SET', l.key, state, 'PX', digits(math.ceil(l.ttl / 1000)))
    end
  end

  -- Gives back a reservation made at `at` (units: its cost unless given):
  -- only its window's count holds it, and only while that window is the
  -- current one. Negative units (a settlement's charge): -units more to the
  -- current window's count, whenever `at` was (a state made when none).
  function fixed_window.release(l, at, now, units)
    units = units or l.cost
    local window = math.floor(now / l.period)
    local refund = units > 0
    if refund and math.floor(at / l.period) ~= window then return false end
    local state = redis.call('GET', l.key)
    l.state = state -- for a check that follows
    local w, c = string.match(state or '', '^(%d+):(%d+)$')
    local current = w and tonumber(w) == window
    c = current and tonumber(c) or 0
    if refund and c == 0 then return false end
    state = string.format('%d:%d', window, math.max(0, c - units))
    if current and l.estimate then
      -- a settlement's: the state expires at this window's end already, and
      -- KEEPTTL costs Redis less (a release's sets it again, as it did)
      redis.call('SET', l.key, state, 'KEEPTTL')
    else
      redis.call('SET', l.key, state,
        'PX', digits(math.ceil(((window + 1) * l.period - now) / 1000)))
    end
    l.state = state
    return true
  end

  -- Leases: a window's (see the driver); the units left of an ended lease
  -- taken at `at` go back as a release of them.
  fixed_window.leases = 'window'
  fixed_window.giveback = fixed_window.release
end
local fixed_window = lazy(make_fixed_window)
