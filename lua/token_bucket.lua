-- token_bucket: a bucket of burst tokens (default: limit), refilled
-- continuously at limit per PERIOD; a request takes cost tokens. State: one
-- string "<tokens>:<time>", kept until the bucket would be full again.
--
-- Leases (lease=): a lease takes its units as tokens and lives lease_us;
-- the units leased in a slot of lease_us stay "held" until the end of the
-- slot after it (every lease taken in a slot has ended by then), and no
-- check, lease or not, lets the bucket refill above burst - held: the
-- units a server has not used yet are not refilled under it. The state
-- then is "<tokens>:<time>:<slot>:<cur>:<prev>": slot = floor(time /
-- lease_us), cur the units leased in that slot, prev in the slot before.
-- Every form reads both.
-- Its functions, made at the first look into the table (lazy(), in
-- common.lua): a call pays for the algorithms it uses alone, the whole
-- script running at each call.
local function make_token_bucket(token_bucket)
  -- slack for floating point, in time (microseconds), not in tokens: a slack
  -- in tokens would be a long time at slow rates
  local slack = 1e-3
  -- a lease's life, and the slots that count the units held
  local lease_us = 100000
  -- the longest wait (us) the module takes: no state is kept longer
  local max_wait_us = 3153600000000000

  -- The fewest tokens l's bucket holds: a debt whose refill would take
  -- longer than max_wait_us (less 1 us of rounding) is not held, so every
  -- wait stays within what the module takes and is exact.
  local function floor_tokens(l)
    return l.burst - (max_wait_us - 1) * l.limit / l.period
  end

  function token_bucket.check(l, now)
    local capacity = l.burst
    local tokens = capacity
    -- what refills from now if nothing is taken (over tokens when held)
    local level = tokens

    -- l.state: the state a settlement just left (false: none), else read
    local state = l.state
    if state == nil then state = redis.call('GET', l.key) end
    if state then
      local t, at, fields = string.match(state, '^([^:]+):(%d+)(.*)$')
      t, at = tonumber(t), tonumber(at)
      if t and at then
        tokens = math.min(capacity,
          t + math.max(0, now - at) * l.limit / l.period)
        tokens = math.max(tokens, floor_tokens(l))
        level = tokens
        if fields ~= '' then
          token_bucket.make_leases()
          tokens = token_bucket.hold(l, fields, tokens, now)
          -- not the script's: as no state
          if not tokens then tokens, level = capacity, capacity end
        end
      end
    end

    -- microseconds until there are n tokens (0 if there are)
    local function wait(n)
      local w = math.max(0, math.ceil((n - level) * l.period / l.limit - slack))
      if l.held_cur then w = math.max(w, token_bucket.held_wait(l, n, now)) end
      return math.min(w, max_wait_us)
    end
    -- the slack in tokens, never a remaining above the capacity (at 10^6
    -- tokens a microsecond, it is 1000 tokens)
    local per_slack = slack * l.limit / l.period

    if l.cost <= capacity and wait(l.cost) == 0 then
      local left = math.max(0, tokens - l.cost)
      l.left = left
      level = left
      l.full_in = wait(capacity)
      return 1, math.min(capacity - l.cost, math.floor(left + per_slack)),
        l.full_in, 0
    end

    local retry = l.period
    if l.cost <= capacity then retry = wait(l.cost) end

    -- tokens below zero: a settlement's debt
    return 0, math.max(0, math.min(capacity, math.floor(tokens + per_slack))),
      wait(capacity), math.max(1, retry)
  end

  function token_bucket.commit(l, now)
    local state
    if l.held_cur then
      state = token_bucket.held_state(l, l.left, now)
    else
      state = string.format('%.17g:%d', l.left, now)
    end
    redis.call('SET', l.key, state,
      'PX', digits(math.max(1, math.ceil(l.full_in / 1000))))
  end

  -- Gives back a reservation made at `at` (units: its cost unless given):
  -- that many tokens, added at the stored
  -- time. Exact while the state is the reservation's (stored at `at`); if
  -- others passed since, a bucket without the reservation may have
  -- overflowed by up to what refilled in between: that much is kept back.
  -- The held fields stay as they are (a check caps the tokens by them).
  -- Negative units (a settlement's charge, whenever `at` was): the tokens
  -- as a check sees them (the held units cap them) less -units, below zero
  -- if so: the bucket refills from there, repaying the debt at the rate.
  -- Stored at now, the held fields as they are, kept until full: a debt
  -- whose refill would take over 100 years is held as one of 100 years
  -- (floor_tokens()), so that every wait stays one the module takes.
  function token_bucket.release(l, at, now, units)
    units = units or l.cost
    local state = redis.call('GET', l.key)
    l.state = state -- for a check that follows
    local t, stored_at, fields =
      string.match(state or '', '^([^:]+):(%d+)(.*)$')
    t, stored_at = tonumber(t), tonumber(stored_at)
    if units < 0 then
      local tokens = l.burst
      if t and stored_at then
        tokens = math.min(l.burst,
          t + math.max(0, now - stored_at) * l.limit / l.period)
        if fields ~= '' then
          token_bucket.make_leases()
          tokens = token_bucket.hold(l, fields, tokens, now) or l.burst
        end
      end
      tokens = math.max(tokens + units, floor_tokens(l))
      local full_in = math.ceil((l.burst - tokens) * l.period / l.limit - slack)
      state = string.format('%.17g:%d', tokens, now)
      if l.held_cur then
        full_in = math.max(full_in, token_bucket.held_wait(l, l.burst, now))
        state = token_bucket.held_state(l, tokens, now)
        l.held_cur, l.held_prev = nil, nil -- a check reads them again
      end
      redis.call('SET', l.key, state,
        'PX', digits(math.max(1,
          math.min(3153600000000, math.ceil(full_in / 1000)))))
      l.state = state
      return true
    end
    if not (t and stored_at) or stored_at < at then return false end
    -- until the held units' end (us), where any are held
    local held_for = 0
    if fields ~= '' then
      local slot = string.match(fields, '^:(%d+):%d+:%d+$')
      if not slot then return false end
      held_for = (tonumber(slot) + 2) * lease_us - now
    end
    local back = units - (stored_at - at) * l.limit / l.period
    local refilled = math.max(0, now - stored_at) * l.limit / l.period
    -- full again by now: nothing of the reservation counts any more
    if back <= 0 or t + refilled >= l.burst then return false end
    t = math.min(l.burst, t + back)
    local full_in =
      math.ceil((l.burst - t - refilled) * l.period / l.limit - slack)
    if held_for <= 0 then
      fields = ''
      if full_in <= 0 then
        redis.call('DEL', l.key) -- full: as no state at all
        l.state = false
        return true
      end
    end
    state = string.format('%.17g:%d', t, stored_at) .. fields
    redis.call('SET', l.key, state,
      'PX', digits(math.ceil(math.max(full_in, held_for) / 1000)))
    l.state = state
    return true
  end

  token_bucket.leases = 'bucket'

  -- The functions of leases and held units, made by the calls that need
  -- them alone: a script's every function is made again at each call, and
  -- the calls without leases would pay for these.
  function token_bucket.make_leases()
    if token_bucket.lease then return end

    -- The held fields ":<slot>:<cur>:<prev>" of a state read at now, rolled
    -- to now's slot into l (held_cur: this slot's, held_prev: the one
    -- before's; left unset when nothing is held any more): the tokens
    -- capped at burst - held; nil when the fields are not the script's.
    function token_bucket.hold(l, fields, tokens, now)
      local slot, cur, prev = string.match(fields, '^:(%d+):(%d+):(%d+)$')
      slot, cur, prev = tonumber(slot), tonumber(cur), tonumber(prev)
      if not (slot and cur and prev) then return nil end
      local s = math.floor(now / lease_us)
      if slot == s - 1 then
        cur, prev = 0, cur
      elseif slot ~= s then
        return tokens
      end
      if cur + prev == 0 then return tokens end
      l.held_cur, l.held_prev = cur, prev
      -- below zero only when the tokens are (a settlement's debt)
      return math.min(math.max(0, l.burst - cur - prev), tokens)
    end

    -- microseconds until the units held let the bucket hold n tokens
    function token_bucket.held_wait(l, n, now)
      if not l.held_cur or l.burst - l.held_cur - l.held_prev >= n then
        return 0
      end
      local s = math.floor(now / lease_us)
      if l.burst - l.held_cur >= n then return (s + 1) * lease_us - now end
      return (s + 2) * lease_us - now
    end

    -- the state of `tokens` at `at`, with l's held units
    function token_bucket.held_state(l, tokens, at)
      return string.format('%.17g:%d:%d:%d:%d', tokens, at,
        math.floor(at / lease_us), l.held_cur, l.held_prev)
    end

    -- A lease of g units after a check passed (cost c): commits g instead,
    -- held in now's slot. Returns the reset after (as a pass of g) and the
    -- lease's life.
    function token_bucket.lease(l, g, now)
      l.left = math.max(0, l.left + l.cost - g)
      l.cost = g
      l.held_cur, l.held_prev = (l.held_cur or 0) + g, l.held_prev or 0
      l.full_in = math.max(
        math.ceil((l.burst - l.left) * l.period / l.limit - slack),
        token_bucket.held_wait(l, l.burst, now))
      return l.full_in, lease_us
    end

    -- The units left of an ended lease, given back at now: the tokens
    -- become min(burst - held, tokens + units), whenever the lease was
    -- taken (the units held cap them).
    function token_bucket.giveback(l, _, now, units)
      local t, at, fields = string.match(redis.call('GET', l.key) or '',
        '^([^:]+):(%d+)(.*)$')
      t, at = tonumber(t), tonumber(at)
      if not (t and at) then return false end -- none: the bucket is full
      local tokens = math.min(l.burst,
        t + math.max(0, now - at) * l.limit / l.period)
      if fields ~= '' then
        tokens = token_bucket.hold(l, fields, tokens, now)
        if not tokens then return false end
      end
      tokens = math.min(l.burst, tokens + units)
      if l.held_cur then
        tokens = math.min(l.burst - l.held_cur - l.held_prev, tokens)
      end
      local full_in = math.max(
        math.ceil((l.burst - tokens) * l.period / l.limit - slack),
        token_bucket.held_wait(l, l.burst, now))
      if l.held_cur then
        redis.call('SET', l.key, token_bucket.held_state(l, tokens, now),
          'PX', digits(math.ceil(full_in / 1000)))
        l.held_cur, l.held_prev = nil, nil -- the check reads them again
      elseif full_in <= 0 then
        redis.call('DEL', l.key)
      else
        redis.call('SET', l.key, string.format('%.17g:%d', tokens, now),
          'PX', digits(math.ceil(full_in / 1000)))
      end
      return true
    end
  end
end
local token_bucket = lazy(make_token_bucket)
