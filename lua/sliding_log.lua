-- sliding_log: at most limit+burst in any trailing PERIOD. State: a sorted
-- set of the passed requests' times (one member per unit of cost), pruned
-- on every write, so it never holds more members than the capacity.
-- Its functions, made at the first look into the table (lazy(), in
-- common.lua): a call pays for the algorithms it uses alone, the whole
-- script running at each call.
local function make_sliding_log(sliding_log)
  function sliding_log.check(l, now)
    local capacity = l.limit + l.burst
    local since = now - l.period -- entries at or before this time are out
    local count = redis.call('ZCOUNT', l.key,
      '(' .. string.format('%d', since), '+inf')

    l.since, l.count = since, count

    if count + l.cost <= capacity then
      return 1, capacity - count - l.cost, l.period, 0
    end

    local reset, retry = 0, l.period
    if count > 0 then
      local newest = redis.call('ZREVRANGE', l.key, 0, 0, 'WITHSCORES')
      reset = tonumber(newest[2]) + l.period - now
    end
    if l.cost <= capacity then
      -- the (count + cost - capacity)-th oldest entry in the window must
      -- leave it; the ZCARD - count entries before the window, not pruned
      -- yet, rank first. By rank: O(log N), where an offset walks entries
      local rank = redis.call('ZCARD', l.key) + l.cost - capacity - 1
      local oldest = redis.call('ZRANGE', l.key, rank, rank, 'WITHSCORES')
      retry = tonumber(oldest[2]) + l.period - now
    end
    -- count may exceed a capacity lowered since it was stored
    return 0, math.max(0, capacity - count), reset, retry
  end

  -- members a ZADD or ZREM at most: unpack() of more than Lua's C stack
  -- (8000 values) fails
  local chunk = 1000

  function sliding_log.commit(l, now)
    redis.call('ZREMRANGEBYSCORE', l.key, '-inf', string.format('%d', l.since))
    -- names unique while the time stands still: the count only grows then,
    -- unless a release shrank it: then count on past the names taken
    local added, n, prefix = 0, l.count, string.format('%d:', now)
    while added < l.cost do
      local args, m = {}, math.min(chunk, l.cost - added)
      for i = 1, m do
        -- n stays far below 1e14: concatenated as a whole number
        args[2 * i - 1], args[2 * i] = now, prefix .. (n + i)
      end
      n = n + m
      added = added + redis.call('ZADD', l.key, unpack(args))
    end
    redis.call('PEXPIRE', l.key, digits(math.ceil(l.period / 1000)))
  end

  -- Gives back a reservation made at `at` (units: its cost unless given):
  -- that many of the entries at that instant (any of them: alike), while
  -- they are still in the window. The key keeps the expiry of its newest
  -- commit. Negative units (a settlement's charge): -units entries added at
  -- `at` while it is in the window, else at now, but never more than the
  -- log has room for (its capacity): a debt beyond one window is not held.
  function sliding_log.release(l, at, now, units)
    units = units or l.cost
    if units < 0 then
      local since = now - l.period
      if at <= since then at = now end
      redis.call('ZREMRANGEBYSCORE', l.key, '-inf', string.format('%d', since))
      local count = redis.call('ZCARD', l.key)
      local room = math.min(-units, l.limit + l.burst - count)
      if room <= 0 then return false end
      -- names unique as a commit's, apart from its (":s")
      local added, n, prefix = 0, count, string.format('%d:s', at)
      while added < room do
        local args, m = {}, math.min(chunk, room - added)
        for i = 1, m do args[2 * i - 1], args[2 * i] = at, prefix .. (n + i) end
        n = n + m
        added = added + redis.call('ZADD', l.key, unpack(args))
      end
      -- as a commit
      redis.call('PEXPIRE', l.key, digits(math.ceil(l.period / 1000)))
      return true
    end
    if at <= now - l.period then return false end
    local s = string.format('%d', at)
    local entries = redis.call('ZRANGEBYSCORE', l.key, s, s, 'LIMIT', 0, units)
    if #entries == 0 then return false end
    for i = 1, #entries, chunk do
      redis.call('ZREM', l.key,
        unpack(entries, i, math.min(i + chunk - 1, #entries)))
    end
    return true
  end
end
local sliding_log = lazy(make_sliding_log)
