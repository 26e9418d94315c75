#!/usr/bin/perl

# The half-open probe whose client goes away after its call was sent, to a
# Redis that never answers (t/lib/RRL/FakeRedis.pm's silent: it reads and
# never replies to EVALSHA): the call's timeout still ends the probe, as a
# failure, so the circuit goes on probing every cooldown. It used to lose
# the timer with the request: the probe stayed out, and no call was ever
# sent again (every request refused by the circuit at once).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);

use RRL::Test;
use RRL::FakeRedis;

my $t = RRL::Test->new;
my $fake = RRL::FakeRedis->new(behaviour => 'silent', dir => $t->testdir);

my $n = $t->start_nginx(<<"EOF2", wait_connected => 1);
http {
    redis_ratelimit_server 127.0.0.1:${\ $fake->port} timeout=100ms
                           max_failures=1 cooldown=300ms;
    redis_ratelimit_zone \$arg_key zone=d rate=5r/s;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status \$redis_ratelimit_status always;
        redis_ratelimit zone=d;
    }
}
EOF2

sub evalsha { $fake->stats->{EVALSHA} // 0 }

my $r = $n->get('/?key=a');
is($r->{h}{'x-rl-status'}, 'FAILED_OPEN', 'no answer: FAILED_OPEN');
ok($n->wait_log(qr/circuit open/, 1, 2), 'one failure opened the circuit');

# the cooldown over: the probe is sent, then its client resets
sleep 0.35;
my $before = evalsha();
RRL::Test::http_abort($n->port, '/?key=probe', 0.03);
my $deadline = time + 2;
sleep 0.02 while evalsha() == $before && time < $deadline;
is(evalsha(), $before + 1, 'the probe was sent, and its client went away');

# its timeout ends it; after another cooldown the next request probes
sleep 0.1 + 0.3 + 0.2;
$before = evalsha();
$r = $n->get('/?key=b');
is($r->{h}{'x-rl-status'}, 'FAILED_OPEN', 'the next request: FAILED_OPEN');
$deadline = time + 2;
sleep 0.02 while evalsha() == $before && time < $deadline;
is(evalsha(), $before + 1, 'the next request probed: the circuit was not stuck');
cmp_ok($r->{time}, '>=', 0.09, 'it waited for Redis, as a probe does');

$t->done_testing;
