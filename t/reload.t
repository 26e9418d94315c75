#!/usr/bin/perl

# nginx reloads and stops: new workers connect to Redis and the counts go
# on (kept in Redis); a changed rate applies to the same state; a graceful
# stop waits for a request parked on a hung Redis and answers it; no alert
# (e.g. "open socket left") at exit.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $conf = <<'EOF2';
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $arg_key zone=rl rate=%%RATE%% algorithm=fixed_window;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;
        redis_ratelimit zone=rl;
        location / {
        }
    }
}
EOF2

sub conf {
    (my $c = $conf) =~ s/%%RATE%%/$_[0]/;
    return $c;
}

my $n = $t->start_nginx(conf('5r/h'));

my $P = 3600;
my $w = $t->wait_window($P, 15) / $P - 1;

my @rem = map { $n->get('/?key=r')->{h}{'x-ratelimit-remaining'} // 'none' } 1 .. 2;
is("@rem", '4 3', 'before reload: Remaining 4 3');

$n->reload;

my $r = $n->get('/?key=r');
is($r->{h}{'x-rl-status'}, 'PASSED', 'after reload: PASSED');
is($r->{h}{'x-ratelimit-remaining'}, 2, 'after reload: the count went on');

$n->reload(conf('3r/h'));

$r = $n->get('/?key=r');
is($r->{status}, 429, 'reload with 3r/h: the 4th request is over the new rate');
is($r->{h}{'x-ratelimit-limit'}, 3, 'reload with 3r/h: the new Limit');
is($t->redis('GET', 'rrl:{rl:r}:fw'), "$w:3", 'the state kept across reloads');

# a rate lowered below what was already counted: rejected, Remaining 0

$n->reload(conf('2r/h'));

$r = $n->get('/?key=r');
is($r->{status}, 429, 'reload with 2r/h, 3 counted: 429');
is($r->{h}{'x-rl-status'}, 'REJECTED', 'reload with 2r/h: REJECTED, not a failure');
is($r->{h}{'x-ratelimit-limit'}, 2, 'reload with 2r/h: Limit 2');
is($r->{h}{'x-ratelimit-remaining'}, 0, 'reload with 2r/h: Remaining 0, not negative');

my ($clients, $since) = (0, time);
while (time - $since < 5) {
    $clients = grep { /name=nginx-redis-ratelimit/ } $t->redis('CLIENT', 'LIST');
    last if $clients == 1;
    sleep 0.05;
}
is($clients, 1, 'the old workers closed their Redis connections');

# a graceful stop while a request waits on a hung Redis

$t->signal_redis('STOP');

my $s = RRL::Test::http_send($n->port, 'GET', '/?key=parked');
sleep 0.03;
my $pid = $n->{pid};
kill 'QUIT', $pid;
$r = RRL::Test::http_read($s);

$t->signal_redis('CONT');

is($r->{status}, 200, 'parked during a graceful stop: answered');
is($r->{h}{'x-rl-status'}, 'FAILED_OPEN', 'parked during a graceful stop: FAILED_OPEN after the timeout');
ok($r->{time} < 1, sprintf('parked during a graceful stop: fast (%.3f s)', $r->{time}));

my $start = time;
sleep 0.02 while RRL::Test::Nginx::alive($pid) && time - $start < 5;
ok(!RRL::Test::Nginx::alive($pid), 'nginx exited');

# done_testing checks the exit for alerts
$t->done_testing;
