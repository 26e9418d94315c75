#!/usr/bin/perl

# settle= (issue 17) on each algorithm, at 1000 units an hour (fixed and
# sliding windows of an hour, a token bucket of 1000, a leaky bucket of
# 1000 at once, a sliding log of 1000): nothing refills during a step, so
# every number is exact. The upstream (RRL::Upstream) answers with
# X-Usage-Total-Tokens from ?usage=; each request reserves 100.
# - refund: actual 30: the next request sees 870, a control key (actual
#   100, nothing to settle) 800; a leaky bucket refunded to before now has
#   no state left;
# - debt within the limit: actual 500: the next request sees 400;
# - debt beyond the limit: actual 1500: the next request is rejected, with
#   the Retry-After of the algorithm's rule (the window's end; the sliding
#   window's decay; 600 tokens at 1000/h; a sliding log holds at most its
#   capacity: a debt beyond one window is not kept);
# - across a window's edge (fixed and sliding windows of 4 s, an upstream
#   that answers 2 s late): a fixed window drops the refund and charges
#   the current window; a sliding window settles the count of the
#   request's window, as the state's current one or, once a request of the
#   next window moved the state on, as its prev;
# - overrides=on: a key's rate override is what its settlement uses; an
#   unlimited key's settlement changes nothing.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;
use RRL::Upstream;

my $t = RRL::Test->new;
$t->start_redis;
my $u = RRL::Upstream->start($t);

# zone, algorithm, burst, Redis key tag
my @algorithms = (
    ['fw', 'fixed_window', 0, 'fw'],
    ['sw', 'sliding_window', 0, 'sw'],
    ['tb', 'token_bucket', 1000, 'tb'],
    ['lb', 'leaky_bucket', 999, 'lb'],
    ['sl', 'sliding_log', 0, 'sl'],
);

my $up = 'proxy_pass http://127.0.0.1:' . $u->port . '/;';
my $zones = join '', map {
    "    redis_ratelimit_zone \$arg_key zone=$_->[0] rate=1000r/h "
        . "algorithm=$_->[1] burst=$_->[2];\n"
} @algorithms;
my $locations = join '', map {
    "        location /$_->[0]/ {\n"
        . "            redis_ratelimit zone=$_->[0] cost=100 "
        . "settle=\$upstream_http_x_usage_total_tokens;\n"
        . "            $up\n        }\n"
        . "        location /$_->[0]-c/ {\n"
        . "            redis_ratelimit zone=$_->[0] cost=100;\n"
        . "            $up\n        }\n"
} @algorithms;

my $conf = <<'EOF';
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
%%ZONES%%
    redis_ratelimit_zone $arg_key zone=fwe rate=1000r/4s algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=swe rate=1000r/4s algorithm=sliding_window;
    redis_ratelimit_zone $arg_key zone=ov rate=1000r/h algorithm=fixed_window overrides=on;

    server {
        listen 127.0.0.1:%%PORT%%;
        add_header X-RL-Status $redis_ratelimit_status always;

        location = /metrics { redis_ratelimit_metrics; }
%%LOCATIONS%%
        location /fwe/ {
            redis_ratelimit zone=fwe cost=100 settle=$upstream_http_x_usage_total_tokens;
            %%UP%%
        }
        location /fwe-c/ {
            redis_ratelimit zone=fwe cost=100;
            %%UP%%
        }
        location /swe/ {
            redis_ratelimit zone=swe cost=100 settle=$upstream_http_x_usage_total_tokens;
            %%UP%%
        }
        location /ov/ {
            redis_ratelimit zone=ov cost=100 settle=$upstream_http_x_usage_total_tokens;
            %%UP%%
        }
        location /ov-c/ {
            redis_ratelimit zone=ov cost=100;
            %%UP%%
        }
        location /swe-1/ {
            redis_ratelimit zone=swe;
            %%UP%%
        }
    }
}
EOF
$conf =~ s/%%ZONES%%\n/$zones/;
$conf =~ s/%%LOCATIONS%%\n/$locations/;
$conf =~ s/%%UP%%/$up/g;

my $n = $t->start_nginx($conf);

sub settlements {
    $n->zone_metrics('settlements_total', $_[0], 'result', qw(settled settle_failed));
}

sub counts { join ' ', map { $_ // 'none' } settlements($_[0]) }

# waits until a zone has counted $total settlements (both results)
sub wait_settled { $n->wait_settled(@_) }

my $H = 3600;
my $wend = $t->wait_window($H, 150);
my $w = $wend / $H - 1;

###########################################################################
# each algorithm: refund, debt within the limit, debt beyond it

for my $a (@algorithms) {
    my ($z, $name, undef, $tag) = @$a;
    my $key = sub { "rrl:{$z:$_[0]}:$tag" };
    my $done = 0;

    # one settled request, then the next one of the control location
    my $settle = sub {
        my ($k, $usage) = @_;
        my $r = $n->get("/$z/?key=$k&usage=$usage");
        is($r->{status}, 200, "$name: $k (actual $usage) passes");
        is($r->{h}{'x-ratelimit-remaining'}, 900, "$name: $k: 900 after the estimate");
        ok(wait_settled($z, ++$done), "$name: $k settled");
        return $n->get("/$z-c/?key=$k");
    };

    my $r = $settle->('r', 30);
    is($r->{h}{'x-ratelimit-remaining'}, 870, "$name: refund: the next sees 870");
    $r = $settle->('r0', 100);
    is($r->{h}{'x-ratelimit-remaining'}, 800, "$name: control: the next sees 800");
    $r = $settle->('c', 500);
    is($r->{status}, 200, "$name: debt within the limit: the next passes");
    is($r->{h}{'x-ratelimit-remaining'}, 400, "$name: debt within the limit: it sees 400");

    $r = $settle->('o', 1500);
    my $now = time;
    is($r->{status}, 429, "$name: debt beyond the limit: the next is rejected");
    is($r->{h}{'x-ratelimit-remaining'}, 0, "$name: debt beyond the limit: Remaining 0");
    my $ra = $r->{h}{'retry-after'} // 0;
    my $want = {
        fixed_window => $wend - $now,
        # 1500 in this window: 100 more fit when 1500 (1 - e) <= 900
        sliding_window => $wend - $now + 0.4 * $H,
        # -500 tokens: 600 to refill at 1000/h
        token_bucket => 600 * $H / 1000,
        # 1500 intervals ahead; 100 more fit when 1600 - e <= 1000
        leaky_bucket => 600 * $H / 1000,
        # the log holds 1000 (its capacity) at the charge's time
        sliding_log => $H,
    }->{$name};
    ok(abs($ra - $want) <= 2, sprintf('%s: debt beyond the limit: Retry-After '
        . '%d, the rule says %.1f', $name, $ra, $want));

    is(counts($z), "$done 0", "$name: $done settled, none failed");

    if ($name eq 'fixed_window') {
        is($t->redis('GET', $key->('r')), "$w:130", 'fixed_window: refund: count 30 + 100');
        is($t->redis('GET', $key->('o')), "$w:1500", 'fixed_window: debt: count 1500');
    } elsif ($name eq 'sliding_window') {
        is($t->redis('GET', $key->('r')), "$w:130:0", 'sliding_window: refund: count 30 + 100');
        is($t->redis('GET', $key->('o')), "$w:1500:0", 'sliding_window: debt: count 1500');
    } elsif ($name eq 'sliding_log') {
        is($t->redis('ZCARD', $key->('r')), 130, 'sliding_log: refund: 30 + 100 members');
        is($t->redis('ZCARD', $key->('c')), 600, 'sliding_log: debt: 500 + 100 members');
        is($t->redis('ZCARD', $key->('o')), 1000,
            'sliding_log: debt beyond the window: the capacity, 1000 members');
    }
}

###########################################################################
# leaky_bucket: a refund to before now deletes the key

{
    my $r = $n->get('/lb/?key=zero&usage=0');
    is($r->{status}, 200, 'leaky_bucket: actual 0 passes');
    ok(wait_settled('lb', 5), 'leaky_bucket: actual 0 settled');
    is($t->redis('EXISTS', 'rrl:{lb:zero}:lb'), 0,
        'leaky_bucket: refunded to now: no state left');
    $r = $n->get('/lb-c/?key=zero');
    is($r->{h}{'x-ratelimit-remaining'}, 900, 'leaky_bucket: the next sees 900');
}

###########################################################################
# overrides=on: the key's override applies to its settlement

{
    $t->redis('SET', 'rrl:{ov:rate}:limit', '2000r/h');
    $t->redis('SET', 'rrl:{ov:unl}:limit', 'unlimited');
    my $r = $n->get('/ov/?key=rate&usage=30');
    is($r->{h}{'x-ratelimit-limit'}, 2000, 'override rate: its limit applies');
    $r = $n->get('/ov/?key=unl&usage=500');
    is($r->{status}, 200, 'override unlimited: passes');
    ok(wait_settled('ov', 2), 'overrides: settled');
    is(counts('ov'), '2 0', 'overrides: 2 settled, none failed');
    is($t->redis('GET', 'rrl:{ov:rate}:fw'), "$w:30", 'override rate: refunded to 30');
    $r = $n->get('/ov-c/?key=rate');
    is($r->{h}{'x-ratelimit-remaining'}, 1870, 'override rate: the next sees 1870');
    is($t->redis('EXISTS', 'rrl:{ov:unl}:fw'), 0,
        'override unlimited: nothing settled, no state');
    is($n->get('/ov-c/?key=unl')->{status}, 200, 'override unlimited: the next passes');
}

###########################################################################
# across a window's edge: 4 s windows, an upstream 2 s late

{
    my $P = 4;
    my $now = $t->redis_time;
    my $e = (int($now / $P) + 1) * $P;
    $e += $P if $e - $now < 1.3;
    sleep($e - 1 - $now);
    my $W = $e / $P - 1;

    my %s;
    $s{$_->[0]} = RRL::Test::http_send($n->port, 'GET', "/$_->[1]/?key=$_->[0]"
        . "&usage=$_->[2]&delay=2") for
        ['e1', 'fwe', 30], ['e2', 'fwe', 500],
        ['s1', 'swe', 30], ['s2', 'swe', 500],
        ['s3', 'swe', 30], ['s4', 'swe', 500];

    # the next window: a request of s3 and s4 moves their state on
    my $left = $e + 0.3 - time;
    sleep $left if $left > 0;
    for my $k ('s3', 's4') {
        my $r = $n->get("/swe-1/?key=$k");
        is($r->{status}, 200, "sliding_window edge: $k: a request of the next window");
    }
    is($t->redis('GET', 'rrl:{swe:s3}:sw'), ($W + 1) . ':1:100',
        'sliding_window edge: s3 moved on, the request in prev');

    my %r = map { $_ => RRL::Test::http_read($s{$_}, timeout => 5) } keys %s;
    is(join(' ', map { $r{$_}{status} // 'none' } sort keys %r),
        '200 200 200 200 200 200', 'edge: the six slow requests passed');
    ok(time > $e, 'edge: they ended in the next window');
    ok(wait_settled('fwe', 2) && wait_settled('swe', 4), 'edge: settled');
    is(counts('fwe'), '2 0', 'edge: fixed_window: 2 settled');
    is(counts('swe'), '4 0', 'edge: sliding_window: 4 settled');
    ok(time < $e + $P - 0.5, 'edge: still in the next window');

    # fixed_window: the refund dropped, the charge in the current window
    is($t->redis('GET', 'rrl:{fwe:e1}:fw'), '',
        'fixed_window edge: refund dropped: no state in the next window');
    is($t->redis('GET', 'rrl:{fwe:e2}:fw'), ($W + 1) . ':400',
        'fixed_window edge: the charge of 400 in the current window');
    is($n->get('/fwe-c/?key=e1')->{h}{'x-ratelimit-remaining'}, 900,
        'fixed_window edge: refund dropped: the next sees 900');
    is($n->get('/fwe-c/?key=e2')->{h}{'x-ratelimit-remaining'}, 500,
        'fixed_window edge: charged: the next sees 500');

    # sliding_window: the count of the request's window
    is($t->redis('GET', 'rrl:{swe:s1}:sw'), "$W:30:0",
        'sliding_window edge: its window still the current one: 30');
    is($t->redis('GET', 'rrl:{swe:s2}:sw'), "$W:500:0",
        'sliding_window edge: its window still the current one: 500');
    is($t->redis('GET', 'rrl:{swe:s3}:sw'), ($W + 1) . ':1:30',
        'sliding_window edge: moved on: prev refunded to 30');
    is($t->redis('GET', 'rrl:{swe:s4}:sw'), ($W + 1) . ':1:500',
        'sliding_window edge: moved on: prev charged to 500');
}

my @crash = $n->grep_log(qr/\[(alert|crit|emerg)\]|exited on signal|\[warn\].*settle/);
is_deeply(\@crash, [], 'no alert, crit, crash or settle warning in error.log');

$t->done_testing;
