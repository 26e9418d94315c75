#!/usr/bin/perl

# Coalescing: the requests a worker reads in one turn of its event loop go
# to Redis as one EVALSHA of the script's batch form, and each is still
# decided alone, in order. Made deterministic: the worker is stopped
# (SIGSTOP) while 20 clients connect and send their requests, then resumed;
# with multi_accept it accepts them all, and reads them all in its next turn.
# Redis's INFO commandstats counts the calls. Then the same after SCRIPT
# FLUSH (one NOSCRIPT, one SCRIPT LOAD, the batch sent again) and with
# clients that go away before the batch is answered.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use IO::Socket::INET;
use Socket qw(SOL_SOCKET SO_LINGER);
use Test::More;
use Time::HiRes qw(sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $n = $t->start_nginx(<<'EOF');
events { multi_accept on; }
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% timeout=3s;
    redis_ratelimit_zone $arg_key zone=per_key rate=3r/10s algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=per_key_h rate=100r/h;
    redis_ratelimit_status 429;

    server {
        listen 127.0.0.1:%%PORT%% backlog=512;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;

        location / {
            redis_ratelimit zone=per_key;
        }

        location /two/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=per_key;
            redis_ratelimit zone=per_key_h;
        }
    }
}
EOF

my @workers = $n->worker_pids;
is(scalar @workers, 1, 'one worker');
my $worker = $workers[0];
my $port = $n->port;

# the 10 s fixed window must not end mid-test
$t->wait_window(10, 5);

is($n->get('/?key=warmup')->{status}, 200, 'warm-up: connected, script loaded');

sub stats {
    my %c;
    for ($t->redis('INFO', 'commandstats')) {
        $c{$1} = { calls => $2, failed => $3 }
            if /^cmdstat_(\S+):calls=(\d+),.*failed_calls=(\d+)/;
    }
    return \%c;
}

sub calls { my ($s, $cmd) = @_; return $s->{$cmd} ? $s->{$cmd}{calls} : 0 }

# sends every uri on its own connection while the worker is stopped; then
# the sockets, in order
sub send_stopped {
    my (@uris) = @_;
    kill 'STOP', $worker;
    my @s = map { RRL::Test::http_send($port, 'GET', $_) } @uris;
    sleep 0.2;    # the handshakes and requests are in the kernel's queues
    return @s;
}

sub resume { kill 'CONT', $worker }

# --- one turn, one EVALSHA: 10 requests of one key, 10 of ten others

$t->redis('CONFIG', 'RESETSTAT');
my @uris = ((map { '/?key=hot' } 1 .. 10), (map { "/?key=cold$_" } 1 .. 10));
my @s = send_stopped(@uris);
resume();
my @r = map { RRL::Test::http_read($_) } @s;

my $st = stats();
is(calls($st, 'evalsha'), 1, '20 requests read in one turn: one EVALSHA');
is(calls($st, 'get'), 20, 'the script read each request\'s key once');

my @hot = @r[0 .. 9];
is(scalar(grep { ($_->{status} // 0) == 200 } @hot), 3,
    'one key in the batch: exactly its 3 pass');
is(scalar(grep { ($_->{status} // 0) == 429 } @hot), 7, 'and 7 are rejected');
is(join(',', sort map { $_->{h}{'x-ratelimit-remaining'} // '-' }
        grep { ($_->{status} // 0) == 200 } @hot),
    '0,1,2', 'each of the 3 saw the count of those before it');
ok(!(grep { ($_->{h}{'x-rl-status'} // '') ne 'REJECTED' }
        grep { ($_->{status} // 0) == 429 } @hot),
    'the 7 are REJECTED by Redis, not a fail mode');
is(scalar(grep { ($_->{status} // 0) == 200
        && ($_->{h}{'x-ratelimit-remaining'} // '') eq '2' } @r[10 .. 19]),
    10, 'ten other keys: each passed with 2 left');
my ($hot_key) = grep { /per_key\b/ && /hot/ } $t->redis('KEYS', '*');
like($t->redis('GET', $hot_key // 'none'), qr/^\d+:3$/,
    'Redis counted the 3 that passed, not the rejected');

# --- two limits a request, several requests of one key in one batch

$t->redis('CONFIG', 'RESETSTAT');
@s = send_stopped(map { '/two/index.html?key=both' } 1 .. 6);
resume();
@r = map { RRL::Test::http_read($_) } @s;
is(calls(stats(), 'evalsha'), 1, 'two limits each: still one EVALSHA');
is(scalar(grep { ($_->{status} // 0) == 200 } @r), 3, '3 pass');
is(scalar(grep { ($_->{status} // 0) == 429 } @r), 3, '3 rejected');
my ($hourly) = grep { /per_key_h/ && /both/ } $t->redis('KEYS', '*');
ok(defined $hourly, 'the hourly key exists');
like($t->redis('GET', $hourly // 'none'), qr/:3:0$/,
    'the hourly limit counted only the 3 that passed all limits');

# --- NOSCRIPT: the whole batch is sent again after SCRIPT LOAD

$t->redis('SCRIPT', 'FLUSH');
$t->redis('CONFIG', 'RESETSTAT');
@s = send_stopped(map { "/?key=flushed$_" } 1 .. 12);
resume();
@r = map { RRL::Test::http_read($_) } @s;
$st = stats();
is(scalar(grep { ($_->{status} // 0) == 200
        && ($_->{h}{'x-rl-status'} // '') eq 'PASSED' } @r),
    12, 'after SCRIPT FLUSH: all 12 PASSED');
is(calls($st, 'evalsha'), 2, 'two EVALSHA: the batch, then once more');
is($st->{evalsha}{failed}, 1, 'the first failed (NOSCRIPT)');
is(calls($st, 'script|load'), 1, 'one SCRIPT LOAD');

# --- clients that go away before their batch is answered

$t->redis('CONFIG', 'RESETSTAT');
$t->redis('CLIENT', 'PAUSE', '300', 'ALL');
@s = send_stopped(map { "/?key=gone$_" } 1 .. 16);
resume();
sleep 0.1;    # read and sent: the batch waits in the paused Redis
for my $i (grep { $_ % 2 } 0 .. $#s) {
    setsockopt($s[$i], SOL_SOCKET, SO_LINGER, pack('ii', 1, 0));
    close $s[$i];
}
my @kept = map { RRL::Test::http_read($s[$_]) } grep { !($_ % 2) } 0 .. $#s;
is(scalar(grep { ($_->{h}{'x-rl-status'} // '') eq 'PASSED' } @kept), 8,
    'the 8 clients that stayed got their answers from Redis');
is(calls(stats(), 'evalsha'), 1, 'all 16 went in one EVALSHA');
is($n->get('/?key=after')->{status}, 200, 'the worker goes on');
is_deeply([$n->worker_pids], [$worker], 'the same worker');

$t->done_testing;
