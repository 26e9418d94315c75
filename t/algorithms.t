#!/usr/bin/perl

# Every algorithm end to end: exact statuses and header values (Limit,
# Remaining counting down, Reset, Retry-After), the Redis key tag and state,
# and cost > 1 (constant and from a variable). sliding_window is the
# default; gcra is leaky_bucket (same key tag); token_bucket's bucket is N
# unless burst= says otherwise; leaky_bucket burst=B lets B + 1 through at
# once, then one per PERIOD/N. Long periods (h, d) where exact values must
# not depend on timing; where they do, the expected values are computed
# from the Redis times before and after the request (or from the state the
# script wrote, which holds its exact time).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use POSIX qw(ceil floor);
use Test::More;
use Time::HiRes qw(sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

# zone => [parameters, algorithm the key tag must name]
my @zones = (
    [fw => 'rate=3r/h algorithm=fixed_window burst=1', 'fw'],
    [sl => 'rate=3r/h algorithm=sliding_log burst=1', 'sl'],
    [sw => 'rate=3r/h burst=1', 'sw'],                      # the default
    [swx => 'rate=3r/h algorithm=sliding_window burst=1', 'sw'],
    [swd => 'rate=1000r/d algorithm=sliding_window', 'sw'],
    [tb => 'rate=3r/h algorithm=token_bucket', 'tb'],
    [tbb => 'rate=3r/h algorithm=token_bucket burst=5', 'tb'],
    [tbs => 'rate=2r/s algorithm=token_bucket burst=2', 'tb'],
    [lb => 'rate=2r/h algorithm=leaky_bucket burst=2', 'lb'],
    [gcra => 'rate=2r/h algorithm=gcra burst=2', 'lb'],
    [lb0 => 'rate=2r/h algorithm=leaky_bucket', 'lb'],
    [lbs => 'rate=5r/s algorithm=leaky_bucket burst=2', 'lb'],
);
my %tag = map { $_->[0] => $_->[2] } @zones;

# a timeout long enough for a loaded machine: failures are not tested here
my $conf = "http {\n    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% timeout=2s;\n";
$conf .= "    redis_ratelimit_zone \$arg_key zone=$_->[0] $_->[1];\n" for @zones;
$conf .= "    server {\n        listen 127.0.0.1:%%PORT%%;\n"
    . "        add_header X-RL-Status \$redis_ratelimit_status always;\n";
for (@zones) {
    # /Z/: cost from ?cost= (empty: 1); /Z2/: a constant cost of 2
    $conf .= "        location /$_->[0]/ {\n            alias %%TESTDIR%%/html/;\n"
        . "            redis_ratelimit zone=$_->[0] cost=\$arg_cost;\n        }\n";
    $conf .= "        location /$_->[0]2/ {\n            alias %%TESTDIR%%/html/;\n"
        . "            redis_ratelimit zone=$_->[0] cost=2;\n        }\n"
        unless $_->[0] eq 'lb0';    # a capacity of 1: nginx -t refuses cost=2
}
$conf .= "    }\n}\n";

my $n = $t->start_nginx($conf);

my $H = 3600;
my $wend = $t->wait_window($H, 30);    # this hour (and day) has >= 30 s left
my $w = $wend / $H - 1;
my $next_end = $wend + $H;              # the end of the next hourly window

############################################################################
# helpers

# a request, with the Redis time just before and just after it
sub req {
    my ($uri) = @_;
    my $t0 = $t->redis_time;
    my $r = $n->get($uri);
    $r->{t1} = $t->redis_time;
    $r->{t0} = $t0;
    return $r;
}

# "status limit remaining reset retry-after" ('-' for a missing header)
sub hv {
    my ($r) = @_;
    return join ' ', map { $_ // '-' } $r->{status},
        @{ $r->{h} }{qw(x-ratelimit-limit x-ratelimit-remaining
            x-ratelimit-reset retry-after)};
}

sub seconds_up {
    my ($us) = @_;
    my $s = floor($us / 1e6);
    $s++ if $s * 1e6 < $us;
    return $s;
}

# $v within [$lo, $hi] (both bounds included)
sub within {
    my ($v, $lo, $hi, $name) = @_;
    ok(defined $v && $v =~ /^-?\d+$/ && $v >= $lo && $v <= $hi, $name)
        or diag('got ' . ($v // 'undef') . ", expected $lo .. $hi");
}

# requests sent together (the short periods): passes first, by Remaining
# from the highest, then rejections
sub at_once {
    return sort { $a->{status} <=> $b->{status}
        || $b->{h}{'x-ratelimit-remaining'} <=> $a->{h}{'x-ratelimit-remaining'} }
        $n->parallel(@_);
}

sub key { "rrl:{$_[0]:$_[1]}:" . $tag{ $_[0] } }

# the key expires at $when (seconds; the script rounds its TTL up to ms)
sub expires_at {
    my ($k, $when, $name) = @_;
    my $t0 = $t->redis_time;
    my $pttl = $t->redis('PTTL', $k);
    my $t1 = $t->redis_time;
    within($pttl, floor(($when - $t1) * 1000) - 1, ceil(($when - $t0) * 1000) + 1, $name);
}

sub state { $t->redis('GET', key(@_)) }

############################################################################
# fixed_window: N + burst per aligned window

for my $i (1 .. 4) {
    is(hv(req('/fw/?key=f')), "200 4 " . (4 - $i) . " $wend -",
        "fixed_window $i: 200, Limit 3 + 1, Remaining, Reset the window end");
}
is(state(fw => 'f'), "$w:4", 'fixed_window: state "window:count"');

my $r = req('/fw/?key=f');
is(hv($r) =~ s/ \d+$//r, "429 4 0 $wend", 'fixed_window 5: 429, Remaining 0, Reset');
within($r->{h}{'retry-after'}, ceil($wend - $r->{t1}), ceil($wend - $r->{t0}),
    'fixed_window 5: Retry-After until the window end');
is(state(fw => 'f'), "$w:4", 'fixed_window: a rejection changes no state');
expires_at(key(fw => 'f'), $wend, 'fixed_window: expires at the window end');

# cost
is(hv(req('/fw/?key=fc&cost=3')), "200 4 1 $wend -", 'fixed_window cost 3: Remaining 1');
$r = req('/fw/?key=fc&cost=2');
is(hv($r) =~ s/ \d+$//r, "429 4 1 $wend", 'fixed_window cost 2 of 1 left: 429, Remaining 1');
within($r->{h}{'retry-after'}, ceil($wend - $r->{t1}), ceil($wend - $r->{t0}),
    'fixed_window cost 2 of 1 left: Retry-After until the window end');
is(hv(req('/fw/?key=fc&cost=1')), "200 4 0 $wend -", 'fixed_window cost 1: the last unit');
is(state(fw => 'fc'), "$w:4", 'fixed_window cost: count 4');
$r = req('/fw/?key=fbig&cost=5');
is(hv($r) =~ s/^(\d+ \d+ \d+) \d+/$1/r, "429 4 4 $H",
    'fixed_window cost 5 of 4: 429, Remaining 4, Retry-After the period');
within($r->{h}{'x-ratelimit-reset'}, ceil($r->{t0}), ceil($r->{t1}),
    'fixed_window cost 5 of 4: Reset now, nothing is used');
is(state(fw => 'fbig'), '', 'fixed_window cost 5 of 4: no state');
{
    my @r = map { req('/fw2/?key=fk') } 1 .. 3;
    is(join(', ', map { hv($_) =~ s/ \d+$//r } @r),
        "200 4 2 $wend -, 200 4 0 $wend -, 429 4 0 $wend",
        'fixed_window cost=2: Remaining 2, 0, then 429');
}

############################################################################
# sliding_log: N + burst in any trailing PERIOD

sub newest { my @z = $t->redis('ZREVRANGE', $_[0], 0, 0, 'WITHSCORES'); $z[1] }
sub oldest { my @z = $t->redis('ZRANGE', $_[0], 0, 0, 'WITHSCORES'); $z[1] }

for my $i (1 .. 4) {
    $r = req('/sl/?key=s');
    my $reset = seconds_up(newest(key(sl => 's')) + $H * 1e6);
    is(hv($r), "200 4 " . (4 - $i) . " $reset -",
        "sliding_log $i: 200, Limit 4, Remaining, Reset its time + PERIOD");
}
is($t->redis('ZCARD', key(sl => 's')), 4, 'sliding_log: 4 entries');
like(join(' ', $t->redis('ZRANGE', key(sl => 's'), 0, -1)), qr/^(\d+:[1-4] ?){4}$/,
    'sliding_log: members "time:count"');

{
    my ($old, $new) = (oldest(key(sl => 's')), newest(key(sl => 's')));
    $r = req('/sl/?key=s');
    is(hv($r) =~ s/ \d+$//r, "429 4 0 " . seconds_up($new + $H * 1e6),
        'sliding_log 5: 429, Remaining 0, Reset when the newest entry leaves');
    within($r->{h}{'retry-after'}, ceil(($old + $H * 1e6) / 1e6 - $r->{t1}),
        ceil(($old + $H * 1e6) / 1e6 - $r->{t0}),
        'sliding_log 5: Retry-After when the oldest entry leaves');
    is($t->redis('ZCARD', key(sl => 's')), 4, 'sliding_log: a rejection adds no entry');
    expires_at(key(sl => 's'), $new / 1e6 + $H,
        'sliding_log: expires a PERIOD after its newest entry');
}

$r = req('/sl/?key=sc&cost=3');
is($r->{h}{'x-ratelimit-remaining'}, 1, 'sliding_log cost 3: Remaining 1');
is($t->redis('ZCARD', key(sl => 'sc')), 3, 'sliding_log cost 3: three entries');
$r = req('/sl/?key=sc&cost=2');
is(hv($r) =~ s/ \d+$//r, "429 4 1 " . seconds_up(newest(key(sl => 'sc')) + $H * 1e6),
    'sliding_log cost 2 of 1 left: 429, Remaining 1, Reset');
{
    my $old = oldest(key(sl => 'sc')) / 1e6 + $H;
    within($r->{h}{'retry-after'}, ceil($old - $r->{t1}), ceil($old - $r->{t0}),
        'sliding_log cost 2 of 1 left: Retry-After until 1 entry leaves');
}
is($t->redis('ZCARD', key(sl => 'sc')), 3, 'sliding_log cost 2 of 1 left: no entry added');
is(req('/sl/?key=sc')->{h}{'x-ratelimit-remaining'}, 0, 'sliding_log cost 1: the last unit');
{
    $r = req('/sl/?key=sbig&cost=5');
    is(join(' ', @$r{status}, @{ $r->{h} }{qw(x-ratelimit-remaining retry-after)}),
        "429 4 $H", 'sliding_log cost 5 of 4: 429, Remaining 4, Retry-After the period');
    is($t->redis('EXISTS', key(sl => 'sbig')), 0, 'sliding_log cost 5 of 4: no state');
    my @r = map { req('/sl2/?key=sk') } 1 .. 3;
    is(join(', ', map { join ' ', $_->{status}, $_->{h}{'x-ratelimit-remaining'} } @r),
        '200 2, 200 0, 429 0', 'sliding_log cost=2: Remaining 2, 0, then 429');
    is($t->redis('ZCARD', key(sl => 'sk')), 4, 'sliding_log cost=2: one entry per unit');
}

############################################################################
# sliding_window, the default: a fresh key has an empty previous window,
# so the estimate is the current count; Reset is the end of the NEXT window

for my $z (qw(sw swx)) {
    my $what = $z eq 'sw' ? 'sliding_window (default)' : 'sliding_window';
    for my $i (1 .. 4) {
        is(hv(req("/$z/?key=w")), "200 4 " . (4 - $i) . " $next_end -",
            "$what $i: 200, Limit 4, Remaining, Reset the end of the next window");
    }
    $r = req("/$z/?key=w");
    is(hv($r) =~ s/ \d+$//r, "429 4 0 $next_end", "$what 5: 429, Remaining 0, Reset");
    # 4 counted now, weighing 4 * (1 - e/P) in the next window: 1 fits
    # once e = P/4
    within($r->{h}{'retry-after'}, ceil($wend + $H / 4 - $r->{t1}),
        ceil($wend + $H / 4 - $r->{t0}),
        "$what 5: Retry-After a quarter into the next window");
    is(state($z => 'w'), "$w:4:0", "$what: state \"window:current:prev\"");
    expires_at(key($z => 'w'), $next_end, "$what: expires at the end of the next window");
}
is($t->redis('EXISTS', 'rrl:{sw:w}:fw'), 0, 'the default is not fixed_window any more');

# cost
is(hv(req('/sw/?key=wc&cost=3')), "200 4 1 $next_end -", 'sliding_window cost 3: Remaining 1');
$r = req('/sw/?key=wc&cost=2');
is(hv($r) =~ s/ \d+$//r, "429 4 1 $next_end", 'sliding_window cost 2 of 1 left: 429, Remaining 1');
# 3 * (1 - e/P) + 2 <= 4: e = P/3 into the next window
within($r->{h}{'retry-after'}, ceil($wend + $H / 3 - $r->{t1}),
    ceil($wend + $H / 3 - $r->{t0}),
    'sliding_window cost 2 of 1 left: Retry-After a third into the next window');
is(state(sw => 'wc'), "$w:3:0", 'sliding_window cost 2 of 1 left: no state change');
is(hv(req('/sw/?key=wc&cost=1')), "200 4 0 $next_end -", 'sliding_window cost 1: the last unit');
is(state(sw => 'wc'), "$w:4:0", 'sliding_window cost: count 4');
is(hv(req('/sw/?key=wbig&cost=5')) =~ s/^(\d+ \d+ \d+) \d+/$1/r, "429 4 4 $H",
    'sliding_window cost 5 of 4: 429, Remaining 4, Retry-After the period');
is(state(sw => 'wbig'), '', 'sliding_window cost 5 of 4: no state');
{
    my @r = map { req('/sw2/?key=wk') } 1 .. 3;
    is(join(', ', map { hv($_) =~ s/ \d+$//r } @r),
        "200 4 2 $next_end -, 200 4 0 $next_end -, 429 4 0 $next_end",
        'sliding_window cost=2: Remaining 2, 0, then 429');
}

# the weighted estimate: a previous (daily) window of 1000, decaying over
# this one. Expected values for a time $now (seconds) with the state's
# current and prev counts, from the documented formula.

my $D = 86400;
my $day = floor($t->redis_time / $D);

sub sw_expect {
    my ($now, $prev, $current, $cost, $cap, $P) = @_;
    my $window = floor($now / $P);
    my $start = $window * $P;
    my $e = $now - $start;
    my $est = $prev * ($P - $e) / $P + $current;
    my $end2 = $start + 2 * $P;
    if ($est + $cost <= $cap + 1e-9) {
        return { status => 200, remaining => floor($cap - $est - $cost + 1e-9),
            reset => ceil($end2), retry => '-' };
    }
    my $retry;
    if ($current + $cost > $cap) {
        $retry = $start + $P + $P * (1 - ($cap - $cost) / $current) - $now;
    } else {
        $retry = $start + $P * (1 - ($cap - $cost - $current) / $prev) - $now;
    }
    return { status => 429, remaining => floor($cap - $est + 1e-9),
        reset => ceil($current > 0 ? $end2 : $start + $P),
        retry => $retry < 1 ? 1 : ceil($retry) };
}

# each header is a value between what $t0 and $t1 give (Remaining grows,
# Retry-After shrinks with time); they differ only if the request falls on
# a step of the estimate (1 unit per 86.4 s here)
sub check_expect {
    my ($r, $e0, $e1, $name) = @_;
    is($r->{status}, $e0->{status} == $e1->{status} ? $e0->{status}
        : $r->{status}, "$name: status") or return;
    is($r->{h}{'x-ratelimit-limit'}, 1000, "$name: Limit 1000");
    my ($lo, $hi) = sort { $a <=> $b } $e0->{remaining}, $e1->{remaining};
    within($r->{h}{'x-ratelimit-remaining'}, $lo, $hi, "$name: Remaining");
    ($lo, $hi) = sort { $a <=> $b } $e0->{reset}, $e1->{reset};
    within($r->{h}{'x-ratelimit-reset'}, $lo, $hi, "$name: Reset");
    if ($r->{status} == 200) {
        ok(!exists $r->{h}{'retry-after'}, "$name: no Retry-After");
    } else {
        ($lo, $hi) = sort { $a <=> $b } $e0->{retry}, $e1->{retry};
        within($r->{h}{'retry-after'}, $lo, $hi, "$name: Retry-After");
    }
}

$t->redis('SET', key(swd => 'd'), ($day - 1) . ':1000:7');

$r = req('/swd/?key=d');
my ($e0, $e1) = map { sw_expect($_, 1000, 0, 1, 1000, $D) } $r->{t0}, $r->{t1};
check_expect($r, $e0, $e1, sprintf('sliding_window, 1000 in the previous '
    . 'day, %.0f s into this one', $r->{t0} - $day * $D));
my $cur = $r->{status} == 200 ? 1 : 0;
is(state(swd => 'd'), $cur ? "$day:1:1000" : ($day - 1) . ':1000:7',
    'sliding_window: the previous count moved to prev (written only on a pass)');

# two more than what is left: rejected (not on the edge of a step),
# Retry-After when the previous window has decayed enough
my $cost = ($r->{h}{'x-ratelimit-remaining'} // 0) + 2;
$cost = 1000 if $cost > 1000;
$r = req("/swd/?key=d&cost=$cost");
($e0, $e1) = map { sw_expect($_, 1000, $cur, $cost, 1000, $D) } $r->{t0}, $r->{t1};
check_expect($r, $e0, $e1, "sliding_window, the same key, cost $cost");
is($r->{status}, 429, "sliding_window, cost $cost: rejected");

############################################################################
# token_bucket: a bucket of B (default N) refilled at N per PERIOD

# the state the script wrote: tokens left and the time of the request (us)
sub tb_state {
    my ($v) = @_;
    return $v =~ /^([-+.\deE]+):(\d+)$/ ? ($1, $2) : (undef, undef);
}

sub tb_reset {
    my ($zone, $key, $cap, $limit, $period_s) = @_;
    my ($tokens, $at) = tb_state(state($zone => $key));
    return 'no state' unless defined $at;
    my $rate = $limit / ($period_s * 1e6);
    return seconds_up($at + ceil(($cap - $tokens) / $rate));
}

# Retry-After of a rejected request for $cost tokens: the state is unchanged,
# the tokens at the time of the request are the state's plus the refill
sub tb_retry {
    my ($r, $zone, $key, $cost, $cap, $limit, $period_s, $name) = @_;
    my ($tokens, $at) = tb_state(state($zone => $key));
    my $rate = $limit / ($period_s * 1e6);
    my @e = map { my $now = $_ * 1e6;
        my $tk = $tokens + ($now - $at) * $rate;
        $tk = $cap if $tk > $cap;
        my $s = seconds_up(ceil(($cost - $tk) / $rate));
        $s < 1 ? 1 : $s } $r->{t1}, $r->{t0};
    within($r->{h}{'retry-after'}, @e, $name);
}

my $first;
for my $i (1 .. 3) {
    $r = req('/tb/?key=b');
    $first //= $r;
    my $reset = tb_reset(tb => 'b', 3, 3, $H);
    is(hv($r), "200 3 " . (3 - $i) . " $reset -",
        "token_bucket $i: 200, Limit N = 3, Remaining, Reset when full again");
    # the refill since the first request makes up for its later time
    within($reset, ceil($first->{t0} + $i * $H / 3), ceil($first->{t1} + $i * $H / 3),
        "token_bucket $i: that is $i tokens of 1200 s after the first request");
}
{
    my ($tokens, $at) = tb_state(state(tb => 'b'));
    ok(defined $tokens && $tokens >= 0 && $tokens < 0.01,
        "token_bucket: state \"tokens:time\", nearly empty ($tokens)");
    within(floor($at / 1e6), floor($r->{t0}) - 1, ceil($r->{t1}),
        'token_bucket: the time in the state is the time of the last pass');
    my $before = state(tb => 'b');
    $r = req('/tb/?key=b');
    # refill since $at makes up exactly for the wait: the same full time
    my $rate = 3 / ($H * 1e6);
    my @reset = map { my $now = $_ * 1e6;
        seconds_up($now + ceil((3 - ($tokens + ($now - $at) * $rate)) / $rate)) }
        $r->{t0}, $r->{t1};
    is(hv($r) =~ s/^(\d+ \d+ \d+) \d+ \d+$/$1/r, '429 3 0',
        'token_bucket 4: 429, Remaining 0');
    tb_retry($r, tb => 'b', 1, 3, 3, $H, 'token_bucket 4: Retry-After one token (1200 s)');
    within($r->{h}{'x-ratelimit-reset'}, $reset[0], $reset[1],
        'token_bucket 4: Reset when full again');
    is(state(tb => 'b'), $before, 'token_bucket: a rejection changes no state');
    expires_at(key(tb => 'b'), $at / 1e6 + ceil((3 - $tokens) / $rate) / 1e6,
        'token_bucket: expires when full again');
}

for my $i (1 .. 5) {
    $r = req('/tbb/?key=b');
    is(hv($r), "200 5 " . (5 - $i) . ' ' . tb_reset(tbb => 'b', 5, 3, $H) . ' -',
        "token_bucket burst=5, $i: Limit B = 5, not N + B");
}
$r = req('/tbb/?key=b');
is(hv($r) =~ s/^(\d+ \d+ \d+) \d+ \d+$/$1/r, '429 5 0', 'token_bucket burst=5, 6: 429');
tb_retry($r, tbb => 'b', 1, 5, 3, $H, 'token_bucket burst=5, 6: Retry-After one token (1200 s)');

# cost
$r = req('/tb/?key=bc&cost=2');
is(hv($r), '200 3 1 ' . tb_reset(tb => 'bc', 3, 3, $H) . ' -', 'token_bucket cost 2: Remaining 1');
my $st = state(tb => 'bc');
$r = req('/tb/?key=bc&cost=2');
is(hv($r) =~ s/^(\d+ \d+ \d+) \d+ \d+$/$1/r, '429 3 1',
    'token_bucket cost 2 of 1 left: 429, Remaining 1');
tb_retry($r, tb => 'bc', 2, 3, 3, $H, 'token_bucket cost 2 of 1 left: Retry-After one token');
is(state(tb => 'bc'), $st, 'token_bucket cost 2 of 1 left: no state change');
is(req('/tb/?key=bc&cost=1')->{h}{'x-ratelimit-remaining'}, 0, 'token_bucket cost 1: the last token');
is(hv(req('/tb/?key=bbig&cost=4')) =~ s/^(\d+ \d+ \d+) \d+/$1/r, "429 3 3 $H",
    'token_bucket cost 4 of 3: 429, Remaining 3, Retry-After the period');
is(state(tb => 'bbig'), '', 'token_bucket cost 4 of 3: no state');
{
    my @r = map { req('/tb2/?key=bk') } 1 .. 2;
    is(join(', ', map { join ' ', $_->{status}, $_->{h}{'x-ratelimit-remaining'} } @r),
        '200 1, 429 1', 'token_bucket cost=2: Remaining 1, then 429');
    tb_retry($r[1], tb => 'bk', 2, 3, 3, $H, 'token_bucket cost=2: Retry-After one token');
}

# continuous refill: 2r/s, bucket of 2. Timing-sensitive: an attempt whose
# requests take longer than the slots below is redone on a fresh key.

# runs $code->($attempt) until it returns results (not undef: its timing
# held), at most 3 times; then checks them: [got, expected, name] each
sub attempts {
    my ($what, $code) = @_;
    for my $attempt (1 .. 3) {
        my $res = $code->($attempt);
        if ($res) {
            is($_->[0], $_->[1], $_->[2]) for @$res;
            return;
        }
        diag("$what: attempt $attempt missed its time slot, again");
    }
    fail("$what: the timing never held");
}

sub sl_fmt {
    my ($r, @h) = @_;
    return join ' ', $r->{status} // 'none', map { $r->{h}{$_} // '-' } @h;
}

attempts('token_bucket 2r/s', sub {
    my ($a) = @_;
    my $uri = "/tbs/?key=r$a";
    my @res;

    my $t0 = $t->redis_time;
    my @r = at_once(($uri) x 3);
    return undef if $t->redis_time - $t0 >= 0.45;
    push @res, [join(', ', map { sl_fmt($_, qw(x-ratelimit-limit x-ratelimit-remaining retry-after)) } @r),
        '200 2 1 -, 200 2 0 -, 429 2 0 1', '2r/s burst=2: 2 pass, then 429, Retry-After 1'];
    push @res, [$t->redis('EXISTS', "rrl:{tbs:r$a}:tb"), 1, '2r/s: key tag tb'];

    # 0.6 s after the last pass: 1.2 tokens; the second request must come
    # before 1.0 s (2 tokens again)
    my ($tokens, $at) = tb_state(state(tbs => "r$a"));
    my $wait = $at / 1e6 + 0.6 - $t->redis_time;
    sleep $wait if $wait > 0;
    @r = map { $n->get($uri) } 1 .. 2;
    return undef if $t->redis_time >= $at / 1e6 + 0.95;
    push @res, [join(', ', map { sl_fmt($_, qw(x-ratelimit-remaining retry-after)) } @r),
        '200 0 -, 429 0 1', '2r/s: 0.6 s later, one token refilled: 1 pass, then 429'];

    # a client that waits Retry-After (1 s): the bucket is full again, not more
    sleep $r[1]{h}{'retry-after'} // 1;
    $t0 = $t->redis_time;
    @r = at_once(($uri) x 3);
    return undef if $t->redis_time - $t0 >= 0.45;
    push @res, [join(', ', map { sl_fmt($_, 'x-ratelimit-remaining') } @r),
        '200 1, 200 0, 429 0', '2r/s: after Retry-After, 2 pass (the bucket holds 2)'];
    return \@res;
});

############################################################################
# leaky_bucket and gcra: one request per PERIOD/N (1800 s), B = 2 extra

sub tat { my $v = state(@_); $v =~ /^\d+(?:\.\d+)?(?:e\+?\d+)?$/i ? $v + 0 : undef }

# Retry-After of a rejected request costing $cost: allowed once the TAT
# it would set is within the burst tolerance, (B + 1) intervals, of now
sub lb_retry {
    my ($r, $zone, $key, $cost, $interval_s, $burst, $name) = @_;
    my $allowed = tat($zone => $key) / 1e6 + ($cost - $burst - 1) * $interval_s;
    my @e = map { my $s = ceil($allowed - $_); $s < 1 ? 1 : $s } $r->{t1}, $r->{t0};
    within($r->{h}{'retry-after'}, @e, $name);
}

for my $z (qw(lb gcra)) {
    my $name = $z eq 'lb' ? 'leaky_bucket' : 'gcra';
    my @tat;
    $first = undef;
    for my $i (1 .. 3) {
        $r = req("/$z/?key=g");
        $first //= $r;
        push @tat, tat($z => 'g');
        is(hv($r), "200 3 " . (3 - $i) . ' ' . seconds_up($tat[-1] // 0) . ' -',
            "$name $i: 200, Limit B + 1 = 3, Remaining, Reset the TAT");
    }
    within(floor($tat[0] / 1e6), floor($first->{t0}) + 1800, ceil($first->{t1}) + 1800,
        "$name: the TAT after the first request is its time + 1800 s");
    is(join(' ', map { $tat[$_] - $tat[$_ - 1] } 1 .. 2), '1800000000 1800000000',
        "$name: each request moves the TAT by PERIOD/N");

    my $before = state($z => 'g');
    $r = req("/$z/?key=g");
    is(hv($r) =~ s/ \d+$//r, '429 3 0 ' . seconds_up($tat[-1]),
        "$name 4: 429, Remaining 0, Reset the TAT");
    # allowed at TAT + 1800 - 3 * 1800
    within($r->{h}{'retry-after'}, ceil($tat[-1] / 1e6 - 3600 - $r->{t1}),
        ceil($tat[-1] / 1e6 - 3600 - $r->{t0}), "$name 4: Retry-After one interval after the first");
    is(state($z => 'g'), $before, "$name: a rejection changes no state");
    expires_at(key($z => 'g'), $tat[-1] / 1e6, "$name: the state expires at the TAT");
}
is($t->redis('EXISTS', 'rrl:{gcra:g}:lb'), 1, 'gcra: key tag lb');

$r = req('/lb0/?key=g');
is(hv($r), '200 1 0 ' . seconds_up(tat(lb0 => 'g')) . ' -', 'leaky_bucket burst 0: Limit 1, 1 passes');
$r = req('/lb0/?key=g');
is(hv($r) =~ s/ \d+$//r, '429 1 0 ' . seconds_up(tat(lb0 => 'g')),
    'leaky_bucket burst 0: the next is rejected');
lb_retry($r, lb0 => 'g', 1, 1800, 0, 'leaky_bucket burst 0: Retry-After PERIOD/N after the first');

# cost
for my $z (qw(lb gcra)) {
    my $name = $z eq 'lb' ? 'leaky_bucket' : 'gcra';
    $r = req("/$z/?key=gc&cost=2");
    my $tat = tat($z => 'gc');
    is(hv($r), '200 3 1 ' . seconds_up($tat) . ' -', "$name cost 2: Remaining 1");
    within(floor($tat / 1e6), floor($r->{t0}) + 3600 - 1, ceil($r->{t1}) + 3600,
        "$name cost 2: TAT moved by 2 intervals");
    $r = req("/$z/?key=gc&cost=2");
    is(hv($r) =~ s/ \d+$//r, '429 3 1 ' . seconds_up($tat),
        "$name cost 2 of 1 left: 429, Remaining 1");
    lb_retry($r, $z => 'gc', 2, 1800, 2, "$name cost 2 of 1 left: Retry-After one interval");
    is(tat($z => 'gc'), $tat, "$name cost 2 of 1 left: no state change");
    is(req("/$z/?key=gc&cost=1")->{h}{'x-ratelimit-remaining'}, 0, "$name cost 1: the last one");
    is(hv(req("/$z/?key=gbig&cost=4")) =~ s/^(\d+ \d+ \d+) \d+/$1/r, "429 3 3 $H",
        "$name cost 4 of 3: 429, Remaining 3, Retry-After the period");
    is(state($z => 'gbig'), '', "$name cost 4 of 3: no state");
    my @r = map { req("/${z}2/?key=gk") } 1 .. 2;
    is(join(', ', map { join ' ', $_->{status}, $_->{h}{'x-ratelimit-remaining'} } @r),
        '200 1, 429 1', "$name cost=2: Remaining 1, then 429");
    lb_retry($r[1], "${z}" => 'gk', 2, 1800, 2, "$name cost=2: Retry-After one interval");
}

# 5r/s burst=2: 3 at once, then one per 200 ms (timing-sensitive, as above)

attempts('leaky_bucket 5r/s', sub {
    my ($a) = @_;
    my $uri = "/lbs/?key=q$a";
    my @res;

    my $t0 = $t->redis_time;
    my @r = at_once(($uri) x 4);
    return undef if $t->redis_time - $t0 >= 0.19;
    push @res, [join(', ', map { sl_fmt($_, qw(x-ratelimit-limit x-ratelimit-remaining retry-after)) } @r),
        '200 3 2 -, 200 3 1 -, 200 3 0 -, 429 3 0 1',
        '5r/s burst=2: B + 1 = 3 pass at once, then 429, Retry-After 1'];
    push @res, [$t->redis('EXISTS', "rrl:{lbs:q$a}:lb"), 1, '5r/s: key tag lb'];

    # a client that waits Retry-After passes: the bucket has drained, 3 again
    sleep $r[-1]{h}{'retry-after'} // 1;
    $t0 = $t->redis_time;
    @r = at_once(($uri) x 4);
    return undef if $t->redis_time - $t0 >= 0.19;
    push @res, [join(' ', map { $_->{status} } @r), '200 200 200 429',
        '5r/s: after Retry-After, 3 pass again'];

    # the next one is allowed at TAT - 2 intervals (400 ms); then one per
    # interval (200 ms)
    for my $step (1 .. 3) {
        my $tat = tat(lbs => "q$a");
        my $allowed = $tat / 1e6 - 0.4;
        my $wait = $allowed + 0.01 - $t->redis_time;
        sleep $wait if $wait > 0;
        my @s = at_once(($uri) x 2);
        return undef if $t->redis_time >= $allowed + 0.195;
        push @res, [join(', ', map { sl_fmt($_, 'x-ratelimit-remaining') } @s),
            '200 0, 429 0', "5r/s burst=2: 200 ms later, one more passes ($step)"];
        push @res, [tat(lbs => "q$a"), $tat + 200000,
            "5r/s burst=2: the TAT moved by 200 ms ($step)"];
    }

    return \@res;
});

############################################################################
# the key tags (of the zones with long periods: the others have expired)

{
    my %seen;
    for my $k ($t->redis('KEYS', 'rrl:*')) {
        my ($zone, $tg) = $k =~ /^rrl:\{([^:]+):[^}]*\}:(\w+)$/ or next;
        $seen{$zone}{$tg}++;
    }
    for my $z (grep { !/^(tbs|lbs)$/ } map { $_->[0] } @zones) {
        is(join(' ', sort keys %{ $seen{$z} || {} }), $tag{$z},
            "zone $z: its keys tagged $tag{$z}");
    }
}

is(join("\n", $n->grep_log(qr/\[error\].*redis_ratelimit:/)), '',
    'no Redis or reply failure logged');

$t->done_testing;
