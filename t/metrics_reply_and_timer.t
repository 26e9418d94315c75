#!/usr/bin/perl

# A script call whose reply and timeout come in the same turn of the event
# loop is decided by the reply, and counted as what happened: a round
# trip, no timeout. The turn is made so: Redis is paused while the worker
# sends the call, then answers while the worker cannot run (a real-time
# busy loop on its CPU for longer than the timeout), so that when the
# worker runs again one epoll_wait() returns the reply with the timer due.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);

use RRL::Test;

my $t = RRL::Test->new;

plan(skip_all => 'needs chrt and taskset and 2 CPUs')
    unless RRL::Test::which('chrt') && RRL::Test::which('taskset')
        && `nproc` >= 2;
plan(skip_all => 'cannot run a real-time task here')
    unless system('chrt -f 1 true 2>/dev/null') == 0;

$t->start_redis;

my $n = $t->start_nginx(<<'EOF2');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% timeout=50ms;
    redis_ratelimit_zone $arg_key zone=rt rate=1000r/h;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;

        location / {
            redis_ratelimit zone=rt;
        }

        location = /metrics {
            redis_ratelimit_metrics;
        }
    }
}
EOF2

sub metrics { ($n->metrics)[0] }

my ($worker) = $n->worker_pids;
my $cpu = 1;
system("taskset -p -c $cpu $worker > /dev/null") == 0 or BAIL_OUT('taskset');

is($n->get('/?key=warm')->{h}{'x-rl-status'}, 'PASSED', 'PASSED');
my $before = metrics();

my $same_turn = 0;
for my $try (1 .. 5) {
    $t->signal_redis('STOP');
    my $s = RRL::Test::http_send($n->port, 'GET', "/?key=k$try");
    sleep 0.02;    # the call is out, its timer armed

    # the worker's CPU taken for 120 ms; Redis answers meanwhile
    my $busy = fork // die "fork: $!";
    if ($busy == 0) {
        exec 'chrt', '-f', '50', 'taskset', '-c', $cpu, 'perl',
            '-MTime::HiRes=time', '-e', '$e = time + 0.12; 1 while time < $e';
        exit 127;
    }
    sleep 0.02;
    $t->signal_redis('CONT');
    waitpid $busy, 0;

    my $r = RRL::Test::http_read($s);
    next unless ($r->{h}{'x-rl-status'} // '') eq 'PASSED';
    $same_turn++;
}
diag("$same_turn of 5 calls answered in the turn of their timeout");
cmp_ok($same_turn, '>=', 1, 'the reply and the timer came in one turn');

my $after = metrics();
my $timeouts = ($after->{'redis_ratelimit_redis_errors_total{kind="timeout"}'} // 0)
    - ($before->{'redis_ratelimit_redis_errors_total{kind="timeout"}'} // 0);
my $passed = ($after->{'redis_ratelimit_requests_total{zone="rt",status="passed"}'} // 0)
    - ($before->{'redis_ratelimit_requests_total{zone="rt",status="passed"}'} // 0);
is($passed, $same_turn, 'those requests counted PASSED');
is($timeouts, 5 - $same_turn, 'and no timeout counted for them');

$t->done_testing;
