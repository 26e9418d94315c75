#!/usr/bin/perl

# Every call a lease limit asks for ends once, on every path (issue 25,
# item 5 and R3): one nginx of one worker, sliding_window rate=10r/10s
# lease=50%, cost=$arg_c, the deny cache on.
# - item 5: cost 1, then cost 9 (refused: the deny cache learns it); in
#   the next window cost 9 is answered by the deny cache, without a call:
#   it takes nothing of the ended lease's leftover unit and counts no
#   give-back; the next request, cost 1, gives the unit back with its
#   call ("1:W:1:T", MONITOR) and asks for a lease (W >= 2: no grant is
#   left in flight), Redis's prev is the 1 that passed, and given_back
#   counts that one call. (Before: the cached answer zeroed the unit and
#   counted a give-back; the cost 1 call gave nothing back and asked for
#   its cost alone, "1:1:0:0"; prev stayed 2.)
# - R3: two lease zones in one location, the second (2r/h) rejects the
#   request while the first passed: the first zone's grant is over (its
#   next call asks for a lease, W > cost), not "in flight" for the
#   timeout + 1 s.
# - Redis stopped: a call that is not made gives its units back to the
#   entry; once Redis is back the next call gives them back to Redis.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Monitor;
use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $n = $t->start_nginx(<<'EOF');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% timeout=1s;
    redis_ratelimit_zone $arg_k zone=sw rate=10r/10s algorithm=sliding_window lease=50%;
    redis_ratelimit_zone $arg_k zone=la rate=1000r/h algorithm=fixed_window lease=50%;
    redis_ratelimit_zone $arg_k zone=lb rate=2r/h algorithm=fixed_window lease=50%;

    server {
        listen 127.0.0.1:%%PORT%%;
        add_header X-RL-Status $redis_ratelimit_status always;

        location = /metrics { redis_ratelimit_metrics; }

        location /sw/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=sw cost=$arg_c;
        }
        location /two/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=la;
            redis_ratelimit zone=lb;
        }
        location /la/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=la cost=$arg_c;
        }
    }
}
EOF

sub metric { ($n->zone_metrics('leases_total', $_[0], 'event', $_[1]))[0] // 0 }

###########################################################################
# item 5: a deny-cache hit takes nothing of an ended lease

{
    my $end = $t->wait_window(10, 8);
    my $r = $n->get('/sw/?k=a&c=1');
    is($r->{h}{'x-rl-status'}, 'PASSED', 'cost 1: PASSED');
    sleep 0.2;
    my (undef, $cur) = split /:/, $t->redis('GET', 'rrl:{sw:a}:sw');
    is($cur, 2, 'cost 1 took a lease: 2 units counted in Redis');
    $r = $n->get('/sw/?k=a&c=9');
    is($r->{status}, 429, 'cost 9: 429 (8 left)');

    sleep($end - time + 0.1);
    my $given = metric('sw', 'given_back');
    my $cached = () = $n->grep_log(qr/by zone "sw" \(cached\)/);
    my $mon = RRL::Monitor->start($t);
    $r = $n->get('/sw/?k=a&c=9');
    is($r->{status}, 429, 'next window, cost 9: 429');
    ok($n->wait_log(qr/by zone "sw" \(cached\)/, $cached + 1, 2),
        'answered by the deny cache');
    is(metric('sw', 'given_back') - $given, 0,
        'the cached answer counts no give-back');

    $r = $n->get('/sw/?k=a&c=1');
    is($r->{h}{'x-rl-status'}, 'PASSED', 'then cost 1: PASSED');
    my @fields = $mon->stop(qr/"(\d+:\d+:\d+:\d+)"/);
    is(scalar @fields, 1, 'one call: the cost 1 request\'s') or diag("@fields");
    my ($c, $w, $b) = split /:/, $fields[0] // '';
    is($b, 1, 'it gives the ended lease\'s unit back') or diag("@fields");
    cmp_ok($w // 0, '>=', 2, 'and asks for a lease: no grant left in flight');
    my (undef, undef, $prev) = split /:/, $t->redis('GET', 'rrl:{sw:a}:sw');
    is($prev, 1, "Redis's prev: the 1 unit that passed, the other given back");
    is(metric('sw', 'given_back') - $given, 1, 'given_back: that call');
}

###########################################################################
# R3: another limit rejects the request: the grant of the one that passed
# is no longer in flight

{
    $t->wait_window(3600, 60);
    my @st = map { $n->get('/two/?k=b')->{status} } 1 .. 2;
    is("@st", '200 200', 'two lease zones: 2 pass (lb: 2r/h)');
    sleep 0.3;    # renewals are in
    my $r = $n->get('/two/?k=b');
    is($r->{status}, 429, 'the third: 429 by lb');
    my $mon = RRL::Monitor->start($t);
    # more than la's units (a few), less than its largest lease (500)
    $r = $n->get('/la/?k=b&c=300');
    is($r->{status}, 200, 'la alone, cost 300: 200');
    my @fields = $mon->stop(qr/"(\d+:\d+:\d+:\d+)"/);
    my ($c, $w) = split /:/, $fields[0] // '';
    is($c, 300, 'its call: cost 300') or diag("@fields");
    cmp_ok($w // 0, '>', 300,
        'and a lease: la\'s grant of the rejected request is not in flight');
}

###########################################################################
# the client goes away while its call is in flight: its answer is dropped,
# and its grant is no longer in flight

{
    is($n->get('/la/?k=g&c=1')->{status}, 200, 'key g: a lease');
    sleep 0.2;
    $t->signal_redis('STOP');
    $n->abort('/la/?k=g&c=100', 0.3);
    $t->signal_redis('CONT');
    sleep 0.3;
    my $mon = RRL::Monitor->start($t);
    my $r = $n->get('/la/?k=g&c=100');
    my @fields = $mon->stop(qr/"(\d+:\d+:\d+:\d+)"/);
    is($r->{status}, 200, 'after a client gone with its call in flight: 200')
        or diag("$r->{status} $r->{h}{'x-rl-status'} @fields");
    my ($c, $w) = split /:/, $fields[0] // '';
    is($c, 100, 'its call: cost 100') or diag("@fields");
    cmp_ok($w // 0, '>', 100,
        'and a lease: the gone client\'s grant is not in flight');
}

###########################################################################
# Redis stopped: a call not made gives its units back to the entry

{
    my $end = $t->wait_window(10, 8);
    my $r = $n->get('/sw/?k=c&c=1');
    is($r->{h}{'x-rl-status'}, 'PASSED', 'cost 1: PASSED, a lease of 1 more');
    sleep($end - time + 0.1);
    $t->stop_redis;
    $r = $n->get('/sw/?k=c&c=1');
    is($r->{h}{'x-rl-status'}, 'FAILED_OPEN', 'Redis stopped: FAILED_OPEN');
    my $given = metric('sw', 'given_back');
    my $connected = () = $n->grep_log(qr/redis_ratelimit: connected to/);
    $t->start_redis;
    ok($n->wait_log(qr/redis_ratelimit: connected to/, $connected + 1, 5),
        'Redis back');
    my $mon = RRL::Monitor->start($t);
    $r = $n->get('/sw/?k=c&c=1');
    my @fields = $mon->stop(qr/"(\d+:\d+:\d+:\d+)"/);
    my (undef, undef, $b) = split /:/, $fields[0] // '';
    is($b, 1, 'the next call gives the unit back') or diag("@fields");
    is(metric('sw', 'given_back') - $given, 1, 'given_back: that call only');
}

$t->done_testing;
