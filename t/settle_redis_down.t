#!/usr/bin/perl

# settle= (issue 17) when Redis fails at settle time. Requests pass with
# Redis up; their upstream (RRL::Upstream) answers late; Redis goes away
# while it answers; the settlements then fail:
# - Redis stopped: each dropped, counted settle_failed (not settled), the
#   warning 'settlement in zone "Z" dropped' at most once a second per
#   worker, the estimate stays charged (Redis restarted empty: nothing of
#   them arrives), no crash, the same worker;
# - Redis hung (SIGSTOP) past the timeout: the settlement times out,
#   counted settle_failed;
# - a request decided by a fail mode (FAILED_OPEN) is not settled at all;
# - Redis back: settlements work again.

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

my $conf = <<'EOF';
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% timeout=200ms;
    redis_ratelimit_zone $arg_key zone=fw rate=1000r/h algorithm=fixed_window;

    server {
        listen 127.0.0.1:%%PORT%%;
        add_header X-RL-Status $redis_ratelimit_status always;

        location = /metrics { redis_ratelimit_metrics; }

        location /s/ {
            redis_ratelimit zone=fw cost=100 settle=$upstream_http_x_usage_total_tokens;
            proxy_pass http://127.0.0.1:%%UPSTREAM%%/;
        }
    }
}
EOF
my $up = $u->port;
$conf =~ s/%%UPSTREAM%%/$up/g;

my $n = $t->start_nginx($conf);
my @workers = $n->worker_pids;
my $H = 3600;
my $w = $t->wait_window($H, 60) / $H - 1;

sub counts {
    join ' ', map { $_ // 'none' }
        $n->zone_metrics('settlements_total', 'fw', 'result', qw(settled settle_failed));
}

sub wait_counts {
    my ($want) = @_;
    my $deadline = time + 5;
    while (time < $deadline) {
        return 1 if counts() eq $want;
        sleep 0.02;
    }
    return 0;
}

sub dropped { scalar $n->grep_log(qr/redis_ratelimit: settlement in zone "fw" dropped: /) }

sub wait_passed {
    my $deadline = time + 5;
    while (time < $deadline) {
        my $r = $n->get('/s/?key=probe' . int(rand 1e9) . '&usage=100');
        return 1 if ($r->{h}{'x-rl-status'} // '') eq 'PASSED';
        sleep 0.1;
    }
    return 0;
}

###########################################################################
# Redis stopped while the upstream answers

{
    my $r = $n->get('/s/?key=up&usage=30');
    is($r->{h}{'x-rl-status'}, 'PASSED', 'Redis up: PASSED');
    ok(wait_counts('1 0'), 'Redis up: settled');
    is($t->redis('GET', 'rrl:{fw:up}:fw'), "$w:30", 'Redis up: refunded to 30');

    sleep 1.1;    # no warning in the last second
    my @s = map { RRL::Test::http_send($n->port, 'GET',
        "/s/?key=d$_&usage=30&delay=1.5") } 1 .. 5;
    sleep 0.5;    # checked and passed, the upstream answering
    is($t->redis('GET', 'rrl:{fw:d1}:fw'), "$w:100", 'Redis down: d1 charged 100');
    $t->stop_redis;
    my @r = map { RRL::Test::http_read($_, timeout => 5) } @s;
    is(join(' ', map { ($_->{status} // 'none') . ' ' . ($_->{h}{'x-rl-status'} // 'none') } @r),
        join(' ', ('200 PASSED') x 5), 'Redis down: the 5 requests served');
    ok(wait_counts('1 5'), 'Redis down: 5 settlements counted settle_failed')
        or diag(counts());
    ok($n->wait_log(qr/settlement in zone "fw" dropped: /, 1, 2),
        'Redis down: the warning');
    my $d = dropped();
    ok($d >= 1 && $d <= 2, "Redis down: logged at most once a second ($d lines)");

    # a request now: fail open, nothing charged, nothing settled
    $r = $n->get('/s/?key=fo&usage=30');
    is($r->{h}{'x-rl-status'}, 'FAILED_OPEN', 'Redis down: FAILED_OPEN');
    sleep 0.3;
    is(counts(), '1 5', 'FAILED_OPEN: not settled, not counted');

    $t->start_redis;
    ok(wait_passed(), 'Redis back: PASSED');
    is($t->redis('GET', 'rrl:{fw:d1}:fw'), '',
        'Redis back (empty): nothing of the dropped settlements arrived');
    is_deeply([$n->worker_pids], \@workers, "the same worker (@workers)");
}

###########################################################################
# Redis hung past the timeout at settle time

{
    # the probes of wait_passed settled (usage=100): their counts are in
    # after a moment; no warning in the last second
    sleep 1.1;
    my ($s0, $f0) = split / /, counts();
    my $before = dropped();
    my $s = RRL::Test::http_send($n->port, 'GET', '/s/?key=hung&usage=30&delay=1');
    sleep 0.4;
    is($t->redis('GET', 'rrl:{fw:hung}:fw'), "$w:100", 'Redis hung: charged 100');
    $t->signal_redis('STOP');
    my $r = RRL::Test::http_read($s, timeout => 5);
    is($r->{h}{'x-rl-status'}, 'PASSED', 'Redis hung: served');
    ok(wait_counts("$s0 " . ($f0 + 1)), 'Redis hung: counted settle_failed (timed out)')
        or diag(counts());
    ok($n->wait_log(qr/settlement in zone "fw" dropped: /, $before + 1, 2),
        'Redis hung: the warning');
    my @l = $n->grep_log(qr/redis_ratelimit: settlement in zone "fw" dropped: /);
    like($l[-1] // '', qr/\[warn\] /, 'Redis hung: the warning at warn');
    $t->signal_redis('CONT');
    ok(wait_passed(), 'Redis running again: PASSED');
}

###########################################################################
# settlements work again

{
    sleep 0.3;    # the probes' settlements counted
    my ($s0, $f0) = split / /, counts();
    my $r = $n->get('/s/?key=again&usage=40');
    is($r->{h}{'x-rl-status'}, 'PASSED', 'again: PASSED');
    ok(wait_counts(($s0 + 1) . " $f0"), 'again: settled');
    is($t->redis('GET', 'rrl:{fw:again}:fw'), "$w:40", 'again: refunded to 40');
    is_deeply([$n->worker_pids], \@workers, "the same worker (@workers)");
}

my @crash = $n->grep_log(qr/\[(alert|crit|emerg)\]|exited on signal/);
is_deeply(\@crash, [], 'no alert, crit or crash in error.log');

$t->done_testing;
