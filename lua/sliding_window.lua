-- sliding_window: the weighted two-window estimate
--   prev * (1 - elapsed / PERIOD) + current
-- where current counts this aligned window and prev the one before it; a
-- request passes if estimate + cost <= limit + burst. State: one string
-- "<window index>:<current>:<prev>", kept while it still weighs: until the
-- end of the next window. A lease (lease=) counts its units as that many
-- requests in the current window and lives until that window's end. A
-- lease zone's units taken ahead for the next window ("<window index>:
-- <units>" at the state's key + ":ahead", until the end of the window
-- after it) are that window's count until its state holds them (the first
-- write of its state takes them in, and drops the key), and count against
-- this window's checks too: at the next window's start, this window's
-- count weighs in full.
-- Its functions, made at the first look into the table (lazy(), in
-- common.lua): a call pays for the algorithms it uses alone, the whole
-- script running at each call.
local function make_sliding_window(sliding_window)
  -- slack for floating point, in time (microseconds): the estimate's own
  -- slack is what it decays in that time, so slow rates are not early
  local slack = 1e-3

  -- a lease zone's read of its state (make_leases)
  local read

  function sliding_window.check(l, now)
    local capacity = l.limit + l.burst
    local window = math.floor(now / l.period)
    local start = window * l.period
    local elapsed = now - start
    local current, prev = 0, 0

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
      local w, c, p = string.match(state, '^(%d+):(%d+):(%d+)$')
      w, c, p = number(w), number(c), number(p)
      if w == window then
        current, prev = c, p
        -- it expires at the next window's end already: KEEPTTL costs less
        -- (not the units taken ahead: their key's)
        l.keep_ttl = not l.folded
      elseif w == window - 1 then
        prev = c
      end
    end

    l.window, l.current, l.prev = window, current, prev
    l.ttl = start + 2 * l.period - now

    local estimate = prev * (l.period - elapsed) / l.period + current
    -- what the estimate loses in `slack` us
    local epsilon = prev * slack / l.period + 1e-12
    -- the units taken ahead for the next window: at its start, this
    -- window's count weighs in full beside them
    local taken_ahead = l.next or 0
    local next_left = capacity - current - taken_ahead - l.cost
    local fits = estimate + l.cost <= capacity + epsilon

    if fits and next_left >= 0 then
      local remaining = math.min(next_left,
        math.floor(capacity - estimate - l.cost + epsilon))
      return 1, remaining, start + 2 * l.period - now, 0
    end

    local reset = 0
    if current > 0 then
      reset = start + 2 * l.period - now
    elseif prev > 0 then
      reset = start + l.period - now
    end

    -- when the estimate has decayed enough for this cost (the whole
    -- microseconds first: near 1.7e15 a double holds no fraction of e)
    local retry = l.period
    if l.cost <= capacity then
      -- the estimate's wait, where the estimate refuses (else it has none:
      -- its formulas would divide by a prev of 0)
      if fits then
        retry = 0
      elseif current + l.cost > capacity then
        -- only in the next window, as this one's count decays
        local e = l.period * (1 - (capacity - l.cost) / current)
        retry = (start + l.period - now) + e
      else
        local e = l.period * (1 - (capacity - l.cost - current) / prev)
        retry = (start - now) + e
      end
      if next_left < 0 then
        -- the next window's units weigh from its start: as its count
        -- with this one's before it, or, when they leave no room, as the
        -- count before the window after it
        local room = capacity - l.cost - taken_ahead
        local wait
        if room >= 0 then
          wait = (start + l.period - now) +
            l.period * (1 - room / math.max(current, 1))
        else
          wait = (start + 2 * l.period - now) +
            l.period * (1 - (capacity - l.cost) / taken_ahead)
        end
        retry = math.max(retry, wait)
      end
    end

    return 0, math.max(0, math.min(capacity - current - taken_ahead,
        math.floor(capacity - estimate + epsilon))), reset,
      math.max(1, math.ceil(retry - slack))
  end

  function sliding_window.commit(l)
    local state = digits(l.window) .. ':' .. digits(l.current + l.cost) ..
      ':' .. digits(l.prev)
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

  -- Gives back a reservation made at `at` (units: its cost unless given)
  -- from its window's count: the
  -- stored current one, or the stored previous one once the state has moved
  -- on to the next window; only while that count still weighs. The state
  -- keeps its window, so its expiry stays the end of the window after it.
  -- Negative units (a settlement's charge): -units more to that count, or,
  -- when the state holds it no more, to the current window's count.
  function sliding_window.release(l, at, now, units)
    units = units or l.cost
    local reserved = math.floor(at / l.period)
    local window = math.floor(now / l.period)
    local state
    if l.lease then
      state = read(l, window)
    else
      state = redis.call('GET', l.key)
    end
    l.state = state -- for a check that follows
    local w, c, p = string.match(state or '', '^(%d+):(%d+):(%d+)$')
    w, c, p = tonumber(w), tonumber(c), tonumber(p)
    local refund = units > 0
    local stored = w -- the state's window: its expiry stays when kept
    if not w then
      if refund then return false end
      w, c, p = window - 2, 0, 0 -- none: as a state that weighs no more
    end
    if w == reserved and w >= window - 1 and (c > 0 or not refund) then
      c = math.max(0, c - units)
    elseif w == reserved + 1 and w == window and (p > 0 or not refund) then
      p = math.max(0, p - units)
    elseif refund then
      return false
    else
      -- the current window's count, as a check reads the state
      if w == window - 1 then
        c, p = 0, c
      elseif w ~= window then
        c, p = 0, 0
      end
      w, c = window, c - units
    end
    state = string.format('%d:%d:%d', w, c, p)
    if w == stored and l.estimate and not l.folded then
      -- a settlement's: the state's expiry stays, and KEEPTTL costs Redis
      -- less (a release's sets it again, as it did)
      redis.call('SET', l.key, state, 'KEEPTTL')
    else
      redis.call('SET', l.key, state,
        'PX', digits(math.ceil(((w + 2) * l.period - now) / 1000)))
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
  sliding_window.leases = 'window'
  sliding_window.giveback = sliding_window.release

  -- Functions of lease zones alone, made with the first of a call (in the
  -- driver's algorithm_of).
  function sliding_window.make_leases()
    if read then return end

    -- The state of l's key in `window` as a check reads it: a lease zone's
    -- units taken ahead for this window or the one before, not in its state
    -- yet, are its state (l.folded: a write of it drops the ahead key);
    -- l.next: the units taken ahead for the next window (0: none).
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
      elseif aw and aw >= window - 1 then
        local w, c = string.match(state or '', '^(%d+):(%d+):')
        w, c = number(w), number(c)
        if not w or w < aw then
          -- the state's count weighs as the one before aw's when it is
          state = digits(aw) .. ':' .. digits(an) .. ':' ..
            digits(w == aw - 1 and c or 0)
          l.folded = true
        end
      end
      return state
    end

    -- A lease renewal's units for the next window (l.want, at least 1), as
    -- that window's count: what its start leaves (this window's count weighs
    -- in full then, beside the units taken ahead already). The check's four
    -- values, the units granted and the lease's life (us from now, until
    -- that window's end); 0, 0 when none is left.
    function sliding_window.ahead(l, now)
      if l.period > ahead_max_us then
        return 0, 0, l.period, l.period, 0, 0
      end
      local capacity = l.limit + l.burst
      local window = math.floor(now / l.period)
      local state = read(l, window)
      l.state = state
      local current = 0
      local w, c = string.match(state or '', '^(%d+):(%d+):')
      if number(w) == window then current = number(c) end
      local available = capacity - current - l.next
      local life = (window + 2) * l.period - now
      l.window, l.count = window + 1, l.next
      if available < 1 then
        return 0, math.max(0, available), life + l.period, life, 0, 0
      end
      local granted = math.min(l.want, available)
      l.cost = granted
      return 1, available - granted, life + l.period, 0, granted, life
    end

    -- The units sliding_window.ahead() granted into the ahead key, which
    -- lives while they weigh; the state it took in written first: the ahead
    -- key is the next window's.
    function sliding_window.commit_ahead(l, now)
      if l.folded then
        l.folded = false
        local w = number(string.match(l.state, '^(%d+):'))
        redis.call('SET', l.key, l.state, 'PX',
          digits(math.ceil(((w + 2) * l.period - now) / 1000)))
      end
      redis.call('SET', l.key .. ':ahead',
        digits(l.window) .. ':' .. digits(l.count + l.cost),
        'PX', digits(math.ceil(((l.window + 2) * l.period - now) / 1000)))
    end
  end
end
local sliding_window = lazy(make_sliding_window)
