-- What the algorithm files and the driver share, each made anew at each
-- call as the whole script is: numbers converted once a call, and the
-- algorithms' tables, filled at their first use.
--
-- Numbers read from states and arguments, and the digits written back,
-- are converted once a call: Lua's tonumber is a strtod and its number to
-- string a sprintf (some 1,600 instructions each), and a batch's states
-- and arguments repeat the same few ("1", a window's index, small counts).
-- Looking a string up is cheap: Lua interns it, its hash made once.
local numbers, digit_strings = {}, {}

-- tonumber(s), false when s is not a number (nil: nil)
local function number(s)
  local v = numbers[s]
  if v == nil then
    if s == nil then return nil end
    v = tonumber(s) or false
    numbers[s] = v
  end
  return v
end

-- string.format('%d', n) of a whole number n: what redis.call sends of a
-- number, without its own conversion ("%.17g": as dear as a strtod)
local function digits(n)
  if n ~= n then return tostring(n) end -- NaN: no table takes it as a key
  local s = digit_strings[n]
  if s == nil then
    s = string.format('%d', n)
    digit_strings[n] = s
  end
  return s
end

-- A table that make(t) fills at the first look into it: an algorithm's
-- functions (two dozen, some 70 ns each to make) only in a call that uses
-- it.
local makers = {}
local unmade = {
  __index = function(t, k)
    setmetatable(t, nil)
    makers[t](t)
    return rawget(t, k)
  end,
}
local function lazy(make)
  local t = setmetatable({}, unmade)
  makers[t] = make
  return t
end

-- Leases are taken ahead for windows of a day at most (us): none is read
-- or granted for a longer one, whose waits could then reach beyond what
-- the module takes.
local ahead_max_us = 86400 * 1000000
