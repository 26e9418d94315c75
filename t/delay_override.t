#!/usr/bin/perl

# delay=D under a live override (issue 25): the zone rate=10r/s burst=5
# algorithm=leaky_bucket overrides=on with delay=0, and a key's override
# "1r/h burst=5", parked the third request for 7,199,937 ms and held an old
# worker "shutting down" as long. A delay is bounded by the zone's own
# burst and rate: (5 - 0) x 100 ms. The override still decides how many
# pass: the 7th of a burst is rejected with its Retry-After. nginx -s quit
# and a reload end within that bound with a delayed request parked, which
# completes; a zone's own long delay is ended by worker_shutdown_timeout.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use IO::Select;
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $conf = <<'EOF2';
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $arg_key zone=lb rate=10r/s burst=5 algorithm=leaky_bucket overrides=on;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;
        add_header X-RL-Delay "[$redis_ratelimit_delay]" always;

        location /d0 { redis_ratelimit zone=lb delay=0; try_files /index.html =404; }
    }
}
EOF2

my $n = $t->start_nginx($conf);

sub override { $t->redis('SET', "rrl:{lb:$_[0]}:limit", '1r/h burst=5') }

sub delay_of { ($_[0]{h}{'x-rl-delay'} // '') =~ /^\[(.*)\]$/ ? $1 : undef }

# sends every uri at once, one connection each; the responses, each with t,
# its completion in seconds from the first send
sub burst { RRL::Test::http_burst(map { [$n->port, $_] } @_) }

# the issue's three requests, one after the other: the third waited 2 h

is(override('abuser'), 'OK', 'override 1r/h burst=5 set');
{
    my @r = map { $n->get("/d0?key=abuser&n=$_", timeout => 5) } 1 .. 3;
    is(join(' ', map { $_->{status} // '-' } @r), '200 200 200',
        'three requests pass');
    is($r[0]{h}{'x-rl-status'}, 'PASSED', 'the first at once');
    for my $k (1, 2) {
        my $d = delay_of($r[$k]);
        ok(length $d && $d > 0 && $d <= 500,
            "request " . ($k + 1) . " waits $d ms: no more than the zone's "
            . '5 x 100 ms (was 3,599,9xx and 7,199,937 ms)');
    }
}

# 7 at once: 6 pass (the override's burst), each within the bound; the 7th
# rejected at once, with the override's Retry-After

is(override('burst'), 'OK', 'override set on a second key');
{
    my @all = burst(map { "/d0?key=burst&n=$_" } 0 .. 6);
    my @ok = grep { ($_->{status} // 0) == 200 } @all;
    is(scalar @ok, 6, 'a burst: 6 of 7 pass');
    my ($rej) = grep { ($_->{status} // 0) != 200 } @all;
    is($rej->{status}, 429, 'a burst: the 7th rejected');
    cmp_ok($rej->{t}, '<', 0.4, 'a burst: the rejection is not delayed');
    my $ra = $rej->{h}{'retry-after'} // 0;
    ok($ra > 3000 && $ra <= 3600,
        "a burst: Retry-After $ra s, the override's hour");
    my @d = sort { $a <=> $b } map { my $d = delay_of($_); length $d ? $d : 0 }
        @ok;
    ok($d[-1] > 0 && $d[-1] <= 500, "a burst: the longest delay $d[-1] ms");
    my @done = sort { $a <=> $b } map { $_->{t} } @ok;
    cmp_ok($done[-1], '<', 1.5, sprintf('a burst: all done in %.0f ms',
        $done[-1] * 1000));
}

# a reload with a delayed request parked: the old worker ends with it,
# within the bound, and the request completes

is(override('reload'), 'OK', 'override set for the reload');
{
    my @old = $n->worker_pids;
    is($n->get('/d0?key=reload&n=first')->{status}, 200, 'reload: first');
    my $t0 = time;
    my $s = RRL::Test::http_send($n->port, 'GET', '/d0?key=reload&n=delayed');
    sleep 0.1;
    $n->reload;
    my $r = RRL::Test::http_read($s, timeout => 5);
    is($r->{status}, 200, 'reload: the delayed request completes with 200');
    is($r->{h}{'x-rl-status'}, 'DELAYED', 'reload: it was DELAYED');
    my $left = time - $t0;
    cmp_ok($left, '<', 2, sprintf('reload: done in %.0f ms', $left * 1000));
    ok(!grep({ RRL::Test::Nginx::alive($_) } @old),
        'reload: the old worker is gone');
}

# nginx -s quit with a delayed request parked: nginx exits within the
# bound, the request completes

is(override('quit'), 'OK', 'override set for the quit');
{
    is($n->get('/d0?key=quit&n=first')->{status}, 200, 'quit: first');
    my $s = RRL::Test::http_send($n->port, 'GET', '/d0?key=quit&n=delayed');
    sleep 0.1;
    my $t0 = time;
    my $pid = $n->read_pid;
    kill 'QUIT', $pid;
    my $r = RRL::Test::http_read($s, timeout => 5);
    while (RRL::Test::Nginx::alive($pid) && time - $t0 < 10) {
        sleep 0.02;
    }
    my $took = time - $t0;
    is($r->{status}, 200, 'quit: the delayed request completes with 200');
    ok(!RRL::Test::Nginx::alive($pid), 'quit: nginx exited');
    cmp_ok($took, '<', 2, sprintf('quit: in %.0f ms', $took * 1000));
}

# the zone's own long delay (1r/m: a minute) is held by a quit as by
# limit_req's, and nginx's worker_shutdown_timeout ends it: the request is
# closed, nothing is left open

{
    my $m = $t->start_nginx(<<'EOF2');
worker_shutdown_timeout 300ms;
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $arg_key zone=own rate=1r/m burst=5 algorithm=leaky_bucket;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;

        location /own { redis_ratelimit zone=own delay=0; try_files /index.html =404; }
    }
}
EOF2
    is($m->get('/own?key=k&n=first')->{status}, 200, 'shutdown timeout: first');
    my $s = RRL::Test::http_send($m->port, 'GET', '/own?key=k&n=delayed');
    sleep 0.1;
    my $t0 = time;
    my $pid = $m->read_pid;
    kill 'QUIT', $pid;
    my $r = RRL::Test::http_read($s, timeout => 5);
    while (RRL::Test::Nginx::alive($pid) && time - $t0 < 10) {
        sleep 0.02;
    }
    my $took = time - $t0;
    ok(!RRL::Test::Nginx::alive($pid), 'shutdown timeout: nginx exited');
    cmp_ok($took, '<', 2, sprintf('shutdown timeout: in %.0f ms, not a '
        . 'minute', $took * 1000));
    ok(!defined $r->{status}, 'shutdown timeout: the delayed request closed');
}

$t->done_testing;
