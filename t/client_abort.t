#!/usr/bin/perl

# Clients that go away while their EVALSHA is in flight, by the thousand,
# under load from concurrent clients: Redis stopped (SIGSTOP) for less than
# the timeout (the replies come after the requests are gone), Redis busy in
# DEBUG SLEEP for longer than the timeout (timeouts, the circuit breaker
# drops the stuck connection with calls still in it), and a fast Redis
# (abort and reply race). Half the clients close (FIN), half reset (RST).
# Afterwards: no connection left behind (stub_status), normal requests
# count exactly, the same worker, no alert; under ASan, no report. Then
# calls whose request is gone (client closed, or timed out) answered
# NOSCRIPT.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use IO::Socket::INET;
use POSIX qw(:sys_wait_h);
use Socket qw(SOL_SOCKET SO_LINGER);
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis(args => ['--enable-debug-command', 'yes']);

my $n = $t->start_nginx(<<'EOF2');
worker_rlimit_nofile 16384;
events { worker_connections 8192; }
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% timeout=1s max_parked=8000;
    redis_ratelimit_zone $arg_key zone=ab rate=100000000r/h algorithm=fixed_window;

    server {
        listen 127.0.0.1:%%PORT%% backlog=4096;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;
        redis_ratelimit zone=ab;

        location = /status {
            stub_status;
        }
    }
}
EOF2

my $P = 3600;
my $w = $t->wait_window($P, 60) / $P - 1;
my @workers = $n->worker_pids;
is(scalar @workers, 1, "one worker (@workers)");

my $port = $n->port;
my $dir = $t->testdir;

# background load: $k clients in a loop until told to stop; each writes one
# line per request: "status x-rl-status seconds"
sub start_load {
    my ($k, $tag) = @_;
    my @pids;
    for my $c (1 .. $k) {
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            open my $out, '>', "$dir/load-$tag-$c.txt" or POSIX::_exit(1);
            $out->autoflush(1);
            my $i = 0;
            while (!-e "$dir/stop-$tag") {
                my $r = RRL::Test::http($port, 'GET', "/?key=load$c-" . $i++,
                    timeout => 10);
                printf $out "%s %s %.3f\n", $r->{status} // 'none',
                    $r->{h}{'x-rl-status'} // 'none', $r->{time};
            }
            POSIX::_exit(0);
        }
        push @pids, $pid;
    }
    return { pids => \@pids, tag => $tag, k => $k };
}

sub stop_load {
    my ($l) = @_;
    open my $fh, '>', "$dir/stop-$l->{tag}"; close $fh;
    waitpid($_, 0) for @{ $l->{pids} };
    my (%seen, $slowest, $count);
    $slowest = 0;
    for my $c (1 .. $l->{k}) {
        open my $in, '<', "$dir/load-$l->{tag}-$c.txt" or next;
        while (<$in>) {
            my ($s, $rl, $time) = split;
            $seen{"$s $rl"}++;
            $count++;
            $slowest = $time if $time > $slowest;
        }
    }
    return (\%seen, $count // 0, $slowest);
}

# $total clients from $procs processes: each opens its connections, sends
# its request, waits $hold seconds (nginx has read them and called Redis),
# then closes them: even ones with a FIN, odd ones with a RST
sub abort_clients {
    my ($total, $hold, $key) = @_;
    my $procs = 4;
    my @pids;
    for my $p (0 .. $procs - 1) {
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            my @s;
            for my $i (1 .. $total / $procs) {
                my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                    PeerPort => $port, Proto => 'tcp') or next;
                syswrite($s, "GET /?key=$key HTTP/1.0\r\nHost: x\r\n\r\n");
                push @s, $s;
            }
            sleep $hold;
            my $i = 0;
            for my $s (@s) {
                setsockopt($s, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0))
                    if $i++ % 2;
                close $s;
            }
            POSIX::_exit(0);
        }
        push @pids, $pid;
    }
    waitpid($_, 0) for @pids;
}

sub active_connections {
    my $r = $n->get('/status');
    return $r->{body} =~ /Active connections:\s*(\d+)/ ? $1 : -1;
}

sub wait_idle {
    my $deadline = time + 10;
    my $a;
    while (time < $deadline) {
        $a = active_connections();
        return $a if $a == 1;
        sleep 0.05;
    }
    return $a;
}

sub wait_passed {
    my $deadline = time + 5;
    while (time < $deadline) {
        return 1 if ($n->get('/?key=probe')->{h}{'x-rl-status'} // '') eq 'PASSED';
        sleep 0.05;
    }
    return 0;
}

sub check_load {
    my ($name, $seen, $count, $slowest) = @_;
    my @bad = grep { !/^200 (PASSED|FAILED_OPEN)$/ } keys %$seen;
    ok($count > 0 && !@bad, "$name: $count load requests, all 200 "
        . "PASSED or FAILED_OPEN") or diag(explain($seen));
    cmp_ok($slowest, '<', 2.5, sprintf('%s: slowest load request %.3f s',
        $name, $slowest));
}

my %aborted;

# 1. Redis stopped for less than the timeout: every reply comes after its
# client has gone

{
    my $l = start_load(3, 'stop');
    sleep 0.2;
    $t->signal_redis('STOP');
    my $start = time;
    abort_clients(1000, 0.15, 'gone1');
    my $left = 0.8 - (time - $start);
    sleep $left if $left > 0;
    $t->signal_redis('CONT');
    note(sprintf 'Redis stopped for %.2f s', time - $start);
    sleep 0.3;
    my ($seen, $count, $slowest) = stop_load($l);
    check_load('SIGSTOP', $seen, $count, $slowest);
    $aborted{gone1} = 1000;
}

is(wait_idle(), 1, 'after SIGSTOP: no connection left (stub_status)');
ok(wait_passed(), 'after SIGSTOP: PASSED again');

# 2. DEBUG SLEEP longer than the timeout: calls time out, the breaker drops
# the connection with calls of gone clients still in it

{
    my $l = start_load(3, 'sleep');
    sleep 0.2;
    my $pid = fork // die;
    if ($pid == 0) {
        open STDOUT, '>', '/dev/null';
        { no warnings 'exec'; exec $t->redis_cli_cmd, 'DEBUG', 'SLEEP', '1.6'; }
        POSIX::_exit(127);
    }
    sleep 0.1;
    abort_clients(1000, 0.15, 'gone2');
    waitpid($pid, 0);
    sleep 0.3;
    my ($seen, $count, $slowest) = stop_load($l);
    check_load('DEBUG SLEEP', $seen, $count, $slowest);
    $aborted{gone2} = 1000;
}

is(wait_idle(), 1, 'after DEBUG SLEEP: no connection left (stub_status)');
ok(wait_passed(), 'after DEBUG SLEEP: PASSED again');

# 3. a fast Redis: aborts race with replies

{
    my $l = start_load(3, 'fast');
    abort_clients(1000, 0, 'gone3');
    abort_clients(1000, 0.005, 'gone3');
    my ($seen, $count, $slowest) = stop_load($l);
    check_load('fast Redis', $seen, $count, $slowest);
    my @bad = grep { !/^200 PASSED$/ } keys %$seen;
    is_deeply(\@bad, [], 'fast Redis: every load request PASSED');
    $aborted{gone3} = 2000;
}

is(wait_idle(), 1, 'after the races: no connection left (stub_status)');

# normal requests count exactly

my @r = map { $n->get('/?key=exact') } 1 .. 10;
is(join(' ', map { $_->{status} . ' ' . $_->{h}{'x-rl-status'} } @r[0, 9]),
    '200 PASSED 200 PASSED', 'afterwards: PASSED');
is(join(' ', map { $_->{h}{'x-ratelimit-remaining'} } @r),
    join(' ', map { 100000000 - $_ } 1 .. 10), 'afterwards: remaining counts down by 1');
is($t->redis('GET', 'rrl:{ab:exact}:fw'), "$w:10", 'afterwards: Redis count 10');

for my $k (sort keys %aborted) {
    my $v = $t->redis('GET', "rrl:{ab:$k}:fw");
    my ($c) = $v =~ /^\d+:(\d+)$/;
    ok(defined $c && $c <= $aborted{$k},
        "$k: Redis counted " . ($c // 'none') . " of $aborted{$k} aborted requests (at most all)");
}

# the clients of 1 and 2 went away while their call was in flight: 499
my %st;
for (split /\n/, RRL::Test::read_file($n->access_log)) {
    $st{"$1 $2"}++ if m{"GET /\?key=(gone\d) HTTP/1.0" (\d+) };
}
is($st{'gone1 499'}, 1000, 'SIGSTOP: 1000 requests ended 499 (client gone mid-call)')
    or diag(explain(\%st));
is($st{'gone2 499'}, 1000, 'DEBUG SLEEP: 1000 requests ended 499 (client gone mid-call)')
    or diag(explain(\%st));
note(join ', ', map { "$_ x$st{$_}" } sort keys %st);

is_deeply([$n->worker_pids], \@workers, "worker pids unchanged (@workers)");
my @crash = $n->grep_log(qr/\[(alert|crit|emerg)\]|exited on signal/);
is_deeply(\@crash, [], 'no alert, crit or crash in error.log');

# 4. calls whose request is gone (client closed, or timed out) answered
# NOSCRIPT: Redis lost the script (SCRIPT FLUSH) while they were in flight
# (held by DEBUG SLEEP). The retry is for a request that waits; nobody
# waits for these: they must just be dropped. Each case on an nginx of its
# own, fewer timeouts than max_failures (the breaker would drop the
# connection instead).

my $conf2 = <<'EOF2';
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% timeout=%%TIMEOUT%%;
    redis_ratelimit_zone $arg_key zone=ns rate=1000r/h algorithm=fixed_window;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;
        redis_ratelimit zone=ns;
    }
}
EOF2

sub debug_sleep {
    my ($s) = @_;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDOUT, '>', '/dev/null';
        { no warnings 'exec'; exec $t->redis_cli_cmd, 'DEBUG', 'SLEEP', $s; }
        POSIX::_exit(127);
    }
    sleep 0.05;    # Redis is asleep
    return $pid;
}

for my $case (['client gone', '1s'], ['timed out', '150ms']) {
    my ($name, $timeout) = @$case;
    (my $c = $conf2) =~ s/%%TIMEOUT%%/$timeout/;
    my $m = $t->start_nginx($c);
    my @mw = $m->worker_pids;
    is($m->get('/?key=ns')->{h}{'x-rl-status'}, 'PASSED', "NOSCRIPT, $name: PASSED before");

    is($t->redis('SCRIPT', 'FLUSH'), 'OK', "NOSCRIPT, $name: SCRIPT FLUSH");
    my $pid = debug_sleep(0.5);
    my @r;
    if ($name eq 'client gone') {
        $m->abort("/?key=ns-gone$_", 0.1) for 1 .. 3;
    } else {
        my @s = map { RRL::Test::http_send($m->port, 'GET', "/?key=ns-to$_") } 1 .. 3;
        @r = map { RRL::Test::http_read($_) } @s;
    }
    waitpid($pid, 0);
    sleep 0.2;    # the NOSCRIPT replies have come

    is(join(' ', map { st_of($_) } @r), $name eq 'timed out'
        ? join(' ', ('200 FAILED_OPEN') x 3) : '', "NOSCRIPT, $name: the requests' outcomes");
    my $after = $m->get('/?key=ns-after');
    is(st_of($after), '200 PASSED', "NOSCRIPT, $name: PASSED after");
    is_deeply([$m->worker_pids], \@mw, "NOSCRIPT, $name: worker pids unchanged (@mw)");
    my @bad = $m->grep_log(qr/\[(alert|crit|emerg)\]|exited on signal/);
    is_deeply(\@bad, [], "NOSCRIPT, $name: no alert or crash in error.log");
    $m->stop;
}

sub st_of {
    my ($r) = @_;
    return ($r->{status} // 'none') . ' ' . ($r->{h}{'x-rl-status'} // 'none');
}

$t->check_error_logs;
$t->done_testing;
