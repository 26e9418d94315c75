-- fixed_window: at most limit+burst per PERIOD, windows aligned on the
-- Unix epoch. State: one string "<window index>:<count>" that expires when
-- its window ends. A lease (lease=) counts its units as that many requests
-- and lives until the window's end. A lease zone's units taken ahead for
-- the next window ("<window index>:<units>" at the state's key + ":ahead",
-- until that window's end) are that window's count until its state holds
-- them: the first write of its state takes them in, and drops the key.
-- Its functions, made at the first look into the table (lazy(), in
-- common.lua): a call pays for the algorithms it uses alone, the whole
-- script running at each call.
local function make_fixed_window(fixed_window)
  -- a lease zone's read of its state (make_leases)
  local read

  function fixed_window.check(l, now)
    local capacity = l.limit + l.burst
    local window = math.floor(now / l.period)
    local window_end = (window + 1) * l.period
    local count = 0

    -- l.state: the state a settlement just left (false: none), else read
    local state = l.state
    if state == nil then
      if l.lease then
        state = read(l, window)
      else
        state = redis.call('GET', l.key)
      end
    end
    if state then
      local w, c = string.match(state, '^(%d+):(%d+)$')
      if w and number(w) == window then
        count = number(c)
        -- it expires at this window's end already: KEEPTTL costs Redis less
        -- (not the units taken ahead: their key's)
        l.keep_ttl = not l.folded
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
    if l.folded then
      -- the units taken ahead it took in
      redis.call('DEL', l.key .. ':ahead')
      l.folded = false
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
    local state
    if l.lease then
      state = read(l, window)
    else
      state = redis.call('GET', l.key)
    end
    l.state = state -- for a check that follows
    local w, c = string.match(state or '', '^(%d+):(%d+)$')
    local current = w and tonumber(w) == window
    c = current and tonumber(c) or 0
    if refund and c == 0 then return false end
    state = string.format('%d:%d', window, math.max(0, c - units))
    if current and l.estimate and not l.folded then
      -- a settlement's: the state expires at this window's end already, and
      -- KEEPTTL costs Redis less (a release's sets it again, as it did)
      redis.call('SET', l.key, state, 'KEEPTTL')
    else
      redis.call('SET', l.key, state,
        'PX', digits(math.ceil(((window + 1) * l.period - now) / 1000)))
    end
    if l.folded then
      redis.call('DEL', l.key .. ':ahead')
      l.folded = false
    end
    l.state = state
    return true
  end

  -- Leases: a window's (see the driver); the units left of an ended lease
  -- taken at `at` go back as a release of them.
  fixed_window.leases = 'window'
  fixed_window.giveback = fixed_window.release

  -- Functions of lease zones alone, made with the first of a call (in the
  -- driver's algorithm_of).
  function fixed_window.make_leases()
    if read then return end

    -- The state of l's key in `window` as a check reads it: a lease zone's
    -- units taken ahead for this window, not in its state yet, are its state
    -- (l.folded: a write of it drops the ahead key); l.next: the units taken
    -- ahead for a later window (0: none).
    read = function(l, window)
      -- GET, not MGET: a key of another type fails the request
      local state = redis.call('GET', l.key)
      local ahead = l.period <= ahead_max_us and
        redis.call('GET', l.key .. ':ahead')
      l.next, l.folded = 0, false
      local aw, an = string.match(ahead or '', '^(%d+):(%d+)$')
      aw, an = number(aw), number(an)
      if aw and aw > window then
        l.next = an
      elseif aw == window then
        local w = number(string.match(state or '', '^(%d+):'))
        if not w or w < aw then
          state, l.folded = digits(aw) .. ':' .. digits(an), true
        end
      end
      return state
    end

    -- A lease renewal's units for the next window (l.want, at least 1), as
    -- that window's count: the check's four values, the units granted and
    -- the lease's life (us from now, until that window's end); 0, 0 when
    -- none is left.
    function fixed_window.ahead(l, now)
      if l.period > ahead_max_us then
        return 0, 0, l.period, l.period, 0, 0
      end
      local capacity = l.limit + l.burst
      local window = math.floor(now / l.period) + 1
      l.state = read(l, window - 1)
      local count = l.next
      local life = (window + 1) * l.period - now
      l.window, l.count = window, count
      if count >= capacity then
        return 0, 0, life, life, 0, 0
      end
      local granted = math.min(l.want, capacity - count)
      l.cost = granted
      return 1, capacity - count - granted, life, 0, granted, life
    end

    -- The units fixed_window.ahead() granted into the ahead key; the state
    -- it took in (its window begun) written first: the ahead key is the
    -- next one's.
    function fixed_window.commit_ahead(l, now)
      if l.folded then
        l.folded = false
        redis.call('SET', l.key, l.state, 'PX',
          digits(math.ceil((l.window * l.period - now) / 1000)))
      end
      redis.call('SET', l.key .. ':ahead',
        digits(l.window) .. ':' .. digits(l.count + l.cost),
        'PX', digits(math.ceil(((l.window + 1) * l.period - now) / 1000)))
    end
  end
end
local fixed_window = lazy(make_fixed_window)
