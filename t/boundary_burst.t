#!/usr/bin/perl

# The documented trade-off at a window edge, rate=10r/4s: N requests just
# before a 4 s boundary B and N just after it all pass fixed_window (2N
# within about a second); sliding_log passes N in any trailing PERIOD; and
# sliding_window passes what its estimate prev * (1 - e/PERIOD) + current
# allows (e: seconds since B), computed from the times of each burst:
#
#   burst 1, 0.5 .. 0 s before B: prev 0, 10 pass
#   burst 2, e in [0.4, 0.8): 10 * (1 - e/4) + current + 1 <= 10 while
#            current + 1 <= 2.5e < 2: 1 passes
#   burst 3, e in [1.6, 2.0): current + 1 <= 2.5e < 5: 3 more pass
#
# Each burst is 10 parallel requests per algorithm. Times are Redis's
# clock (TIME, which the script uses). When a burst misses its time slot
# (a slow machine), the attempt is repeated with fresh keys.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use POSIX qw(ceil floor);
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $n = $t->start_nginx(<<'EOF');
http {
    # a timeout long enough for a loaded machine: failures are not tested here
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% timeout=2s;
    redis_ratelimit_zone $arg_key zone=fw rate=10r/4s algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=sl rate=10r/4s algorithm=sliding_log;
    redis_ratelimit_zone $arg_key zone=sw rate=10r/4s algorithm=sliding_window;

    server {
        listen 127.0.0.1:%%PORT%%;
        add_header X-RL-Status $redis_ratelimit_status always;
        location /fw/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=fw;
        }
        location /sl/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=sl;
        }
        location /sw/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=sw;
        }
    }
}
EOF

my ($N, $P) = (10, 4);
my @alg = qw(fw sl sw);

# Redis's clock (the one the script uses) read through the local one: the
# offset measured once, with its uncertainty, so that timing a burst does
# not cost a redis-cli run on each side
my ($off, $err) = (0, 1);
for (1 .. 5) {
    my $l0 = time;
    my $rt = $t->redis_time;
    my $l1 = time;
    ($off, $err) = ($rt - ($l0 + $l1) / 2, ($l1 - $l0) / 2) if ($l1 - $l0) / 2 < $err;
}
$err += 0.001;
diag(sprintf 'Redis clock offset %.6f s, +- %.6f s', $off, $err) if $ENV{TEST_VERBOSE};

sub rnow { time + $off }

sub sleep_until {
    my ($when) = @_;
    my $d = $when - rnow();
    sleep $d if $d > 0;
}

# the sliding window's allowance: how many units the current window may
# hold at e seconds into it, with prev in the previous one
sub sw_allowed {
    my ($e, $prev) = @_;
    return floor($N - $prev * ($P - $e) / $P + 1e-9);
}

# one burst: $N requests per algorithm, all sent before any reply is read
sub burst {
    my ($key) = @_;
    my $t0 = rnow() - $err;
    my @r = $n->parallel(map { my $a = $_; map { "/$a/?key=$key" } 1 .. $N } @alg);
    my $t1 = rnow() + $err;
    my %by;
    for my $i (0 .. $#alg) {
        $by{ $alg[$i] } = [ @r[$i * $N .. ($i + 1) * $N - 1] ];
    }
    return { t0 => $t0, t1 => $t1, r => \%by };
}

sub passed { scalar grep { ($_->{status} // 0) == 200 } @{ $_[0] } }

my ($res, $B, $key);

for my $attempt (1 .. 4) {
    $key = "edge$attempt";

    # a boundary at least 0.6 s ahead
    my $now = rnow();
    $B = (floor($now / $P) + 1) * $P;
    $B += $P if $B - $now < 0.6;

    sleep_until($B - 0.5);
    my $b1 = burst($key);
    sleep_until($B + 0.45);
    my $b2 = burst($key);
    sleep_until($B + 1.65);
    my $b3 = burst($key);

    my @why;
    push @why, sprintf('burst 1 ended %.3f s after the boundary', $b1->{t1} - $B)
        unless $b1->{t1} < $B - 0.005 && $b1->{t0} > $B - $P;
    push @why, sprintf('burst 2 at %.3f .. %.3f s', $b2->{t0} - $B, $b2->{t1} - $B)
        unless sw_allowed($b2->{t0} - $B, $N) == 1 && sw_allowed($b2->{t1} - $B, $N) == 1;
    push @why, sprintf('burst 3 at %.3f .. %.3f s', $b3->{t0} - $B, $b3->{t1} - $B)
        unless sw_allowed($b3->{t0} - $B, $N) == 4 && sw_allowed($b3->{t1} - $B, $N) == 4;

    if (!@why) {
        $res = [$b1, $b2, $b3];
        last;
    }
    diag("attempt $attempt: timing missed (" . join('; ', @why) . '), again');
}

unless (ok($res, 'the three bursts hit their time slots')) {
    $t->done_testing;
    exit;
}

my ($b1, $b2, $b3) = @$res;

is(scalar(grep { !defined $_->{status} || $_->{status} >= 500 } map { @$_ }
        map { values %{ $_->{r} } } @$res), 0, 'no failed or 5xx response');
is(scalar(grep { ($_->{h}{'x-rl-status'} // '') =~ /^FAILED/ } map { @$_ }
        map { values %{ $_->{r} } } @$res), 0, 'no Redis failure');

# fixed_window: N in each window, 2N within about a second

is(passed($b1->{r}{fw}), $N, 'fixed_window, before the boundary: N pass');
is(passed($b2->{r}{fw}), $N, 'fixed_window, after the boundary: N more pass');
is(passed($b3->{r}{fw}), 0, 'fixed_window, later in the window: none');
ok($b2->{t1} - $b1->{t0} < $P / 2, sprintf('fixed_window: 2N passed within %.2f s, '
    . 'less than half the PERIOD', $b2->{t1} - $b1->{t0}));
is(join(' ', sort { $a <=> $b } map { $_->{h}{'x-ratelimit-remaining'} }
        grep { $_->{status} == 200 } @{ $b2->{r}{fw} }), join(' ', 0 .. $N - 1),
    'fixed_window: the new window counts from zero');
{
    my ($lo, $hi) = (ceil($B + $P - $b3->{t1}), ceil($B + $P - $b3->{t0}));
    is(scalar(grep { ($_->{h}{'retry-after'} // 0) >= $lo && $_->{h}{'retry-after'} <= $hi }
            @{ $b3->{r}{fw} }), $N,
        "fixed_window, burst 3 rejected: Retry-After until the window end ($lo .. $hi)");
}

# sliding_log: N in any trailing PERIOD, whatever the boundary

is(passed($b1->{r}{sl}), $N, 'sliding_log, before the boundary: N pass');
is(passed($b2->{r}{sl}), 0, 'sliding_log, after the boundary: none');
is(passed($b3->{r}{sl}), 0, 'sliding_log, later: none');
ok($b3->{t1} - $b1->{t0} < $P, 'sliding_log: all within one PERIOD');
{
    # rejected until the oldest entry (burst 1) is a PERIOD old
    my @ra = map { $_->{h}{'retry-after'} // 0 } @{ $b2->{r}{sl} };
    my ($lo, $hi) = (ceil($b1->{t0} + $P - $b2->{t1}), ceil($b1->{t1} + $P - $b2->{t0}));
    is(scalar(grep { $_ >= $lo && $_ <= $hi } @ra), $N,
        "sliding_log, burst 2: Retry-After until burst 1 is a PERIOD old ($lo .. $hi)")
        or diag("@ra");
}

# sliding_window: what the estimate allows at the time of each burst

my $sw1 = sw_allowed(0, 0);
my @e2 = map { $_ - $B } $b2->{t0}, $b2->{t1};
my @e3 = map { $_ - $B } $b3->{t0}, $b3->{t1};
my $sw2 = sw_allowed($e2[0], $N);
my $sw3 = sw_allowed($e3[0], $N) - $sw2;
is(sw_allowed($e2[1], $N) . ' ' . sw_allowed($e3[1], $N), sw_allowed($e2[0], $N)
    . ' ' . sw_allowed($e3[0], $N),
    'sliding_window: the allowance is the same at the start and the end of each burst');
is("$sw1 $sw2 $sw3", '10 1 3', 'sliding_window: the estimate allows 10, then 1, then 3');

is(passed($b1->{r}{sw}), $sw1, 'sliding_window, before the boundary: N pass');
is(passed($b2->{r}{sw}), $sw2, sprintf('sliding_window, %.2f s after the boundary: '
    . '%d passes (10 * (1 - e/4) + current + 1 <= 10)', $e2[0], $sw2));
is(passed($b3->{r}{sw}), $sw3, sprintf('sliding_window, %.2f s after the boundary: '
    . '%d more pass', $e3[0], $sw3));
my $sw_total = $sw1 + $sw2 + $sw3;
ok($sw_total > $N && $sw_total < 2 * $N,
    "sliding_window: $sw_total in the span, between sliding_log's N and fixed_window's 2N");

# the rejections: Retry-After 1 (the next unit frees at e = 0.8 s, then
# 2.0 s: at most 0.4 s ahead), Remaining 0
is(join(' ', map { ($_->{h}{'retry-after'} // '-') . '/' . ($_->{h}{'x-ratelimit-remaining'} // '-') }
        grep { $_->{status} != 200 } @{ $b2->{r}{sw} }, @{ $b3->{r}{sw} }),
    join(' ', ('1/0') x (2 * $N - $sw2 - $sw3)),
    'sliding_window, rejected: Retry-After 1, Remaining 0');

my $win = floor($B / $P);
is($t->redis('GET', "rrl:{sw:$key}:sw"), "$win:" . ($sw2 + $sw3) . ":$sw1",
    'sliding_window: state "window:current:prev"');
is($t->redis('ZCARD', "rrl:{sl:$key}:sl"), $N, 'sliding_log: N entries');
is($t->redis('GET', "rrl:{fw:$key}:fw"), "$win:$N", 'fixed_window: N in the new window');

$t->done_testing;
